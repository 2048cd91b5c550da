import Crypto
import Foundation
import Logging
import Testing

@testable import Sender

@Suite("APNs client configuration and local refusals")
struct APNsClientConfigurationTests {
    let key = APNsSigningKey(privateKey: P256.Signing.PrivateKey())

    private func configuration(
        _ environment: APNsEndpoint = .development,
        keyID: String = APNsTestKeys.keyID,
        window: Int = 100,
        streamTimeout: Duration = .seconds(10),
        connectTimeout: Duration = .seconds(10),
        registry: TokenRegistry = TokenRegistry()
    ) throws -> APNsClientConfiguration {
        try APNsClientConfiguration(
            environment: environment,
            keyID: keyID,
            teamID: APNsTestKeys.teamID,
            signingKey: self.key,
            window: window,
            streamTimeout: streamTimeout,
            connectTimeout: connectTimeout,
            tokenRegistry: registry
        )
    }

    @Test("the environments point at Apple's hosts or the custom URL")
    func environments() throws {
        #expect(APNsEnvironment.development.baseURL == "https://api.sandbox.push.apple.com")
        #expect(APNsEnvironment.production.baseURL == "https://api.push.apple.com")
        #expect(
            APNsEndpoint.custom(baseURL: "https://127.0.0.1:8443/", trustedCAPEMPath: nil).baseURL
                == "https://127.0.0.1:8443"
        )
        let configuration = try self.configuration(.production)
        #expect(configuration.tokenRefreshInterval == .seconds(50 * 60))
        #expect(configuration.window == 100)
        #expect(configuration.streamTimeout == .seconds(10))
    }

    @Test("bad values are refused with invalidConfiguration")
    func invalidValues() {
        let invalid = SenderError(.invalidConfiguration, "")
        #expect(throws: invalid) { try self.configuration(window: 0) }
        #expect(throws: invalid) { try self.configuration(streamTimeout: .zero) }
        #expect(throws: invalid) { try self.configuration(connectTimeout: .seconds(-1)) }
        #expect(throws: invalid) { try self.configuration(keyID: "") }
        #expect(throws: invalid) { try self.configuration(keyID: "ABC\"}DEF") }
        #expect(throws: invalid) {
            try self.configuration(.custom(baseURL: "http://127.0.0.1:1", trustedCAPEMPath: nil))
        }
        #expect(throws: invalid) {
            try self.configuration(.custom(baseURL: "https://127.0.0.1:1/?x=1", trustedCAPEMPath: nil))
        }
        #expect(throws: invalid) {
            try self.configuration(.custom(baseURL: "https://user:pw@127.0.0.1:1", trustedCAPEMPath: nil))
        }
        #expect(throws: invalid) { try self.configuration(.custom(baseURL: "not a url", trustedCAPEMPath: nil)) }
    }

    @Test("a custom CA file that is missing or holds no certificate is refused")
    func badCA() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let empty = folder.file("empty.pem")
        _ = FileManager.default.createFile(atPath: empty, contents: Data("nothing here\n".utf8))
        for path in [folder.file("missing.pem"), empty] {
            #expect(throws: SenderError(.trustedCAUnreadable, "")) {
                try self.configuration(.custom(baseURL: "https://127.0.0.1:1", trustedCAPEMPath: path))
            }
        }
    }

    @Test("non-hex and inactive tokens are refused locally with no request; later sends after shutdown too")
    func localRefusals() async throws {
        let registry = TokenRegistry()
        let inactive = String(repeating: "0f", count: 32)
        await registry.markInactive(inactive, timestamp: 1_700_000_000_000)
        // Nothing listens on port 1: any request that did go out would be a connection error, not these outcomes.
        let client = APNsClient(
            configuration: try self.configuration(
                .custom(baseURL: "https://127.0.0.1:1", trustedCAPEMPath: nil),
                registry: registry
            ),
            logger: Logger(label: "test")
        )
        let results = await client.send([
            APNsRequest(deviceToken: "../../etc", headers: [:], body: "{}"),
            APNsRequest(
                deviceToken: inactive,
                headers: ["apns-id": "6F1A3C0E-1D2B-4C5D-8E9F-0A1B2C3D4E5F"],
                body: "{}"
            ),
        ])
        #expect(results.map(\.localOutcome) == [.invalidDeviceToken, .tokenInactive(since: 0)])
        #expect(results.map(\.attempts) == [0, 0])
        #expect(results.map(\.status) == [nil, nil])
        #expect(results[1].apnsID == "6F1A3C0E-1D2B-4C5D-8E9F-0A1B2C3D4E5F")
        #expect(results[1].localOutcome?.message.contains("1700000000000") == true)
        #expect(await client.providerTokensIssued == 0)
        await client.shutdown()
        let after = await client.send(
            APNsRequest(deviceToken: String(repeating: "ab", count: 32), headers: [:], body: "{}")
        )
        #expect(after.localOutcome == .clientShutdown)
        #expect(after.attempts == 0)
        #expect(await client.providerTokensIssued == 0)
        await client.shutdown()  // idempotent
    }

    @Test("a refused connection is a local connectionError result, not a throw or a hang")
    func connectionRefused() async throws {
        let client = APNsClient(
            configuration: try self.configuration(
                .custom(baseURL: "https://127.0.0.1:1", trustedCAPEMPath: nil),
                streamTimeout: .seconds(30),
                connectTimeout: .milliseconds(500)
            ),
            logger: Logger(label: "test")
        )
        let result = await client.send(
            APNsRequest(deviceToken: String(repeating: "ab", count: 32), headers: [:], body: "{}")
        )
        await client.shutdown()
        #expect(result.localOutcome == .connectionError(""))
        #expect(result.status == nil)
        #expect(result.attempts == 1)
    }
}
