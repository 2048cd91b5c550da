import APNsGateway
import Crypto
import Foundation
import Locking
import Logging
import PushTransport
import TestSupport

/// A provider key pair and helpers that make JWTs the way APNs providers do.
struct TestProviderKey: Sendable {
    let teamID: String
    let keyID: String
    let privateKey: P256.Signing.PrivateKey

    init(
        teamID: String = "TEAM123456",
        keyID: String = "KEY1234567",
        privateKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey()
    ) {
        self.teamID = teamID
        self.keyID = keyID
        self.privateKey = privateKey
    }

    func registered(environment: APNsEnvironment? = nil) -> RegisteredProviderKey {
        RegisteredProviderKey(
            teamID: self.teamID,
            keyID: self.keyID,
            publicKey: self.privateKey.publicKey,
            environment: environment
        )
    }

    /// A signed JWT; `iatJSON` is the raw JSON of the `iat` claim (a number or a quoted string).
    func jwt(iatJSON: String, signingKey: P256.Signing.PrivateKey? = nil, keyID: String? = nil) throws -> String {
        let header = #"{"alg":"ES256","kid":"\#(keyID ?? self.keyID)"}"#
        let claims = #"{"iss":"\#(self.teamID)","iat":\#(iatJSON)}"#
        let input = base64url(Array(header.utf8)) + "." + base64url(Array(claims.utf8))
        let signature = try (signingKey ?? self.privateKey).signature(for: Array(input.utf8))
        return input + "." + base64url(Array(signature.rawRepresentation))
    }

    func jwt(issuedAt: Date) throws -> String {
        try self.jwt(iatJSON: String(Int64(issuedAt.timeIntervalSince1970)))
    }

    func bearer(issuedAt: Date) throws -> String { "bearer " + (try self.jwt(issuedAt: issuedAt)) }
}

func base64url(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// A temporary directory removed at the end of a test.
struct TemporaryDirectory: ~Copyable {
    let path: String

    init() throws {
        let path = NSTemporaryDirectory() + "apns-gateway-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        self.path = path
    }

    func file(_ name: String) -> String { (self.path as NSString).appendingPathComponent(name) }

    deinit { try? FileManager.default.removeItem(atPath: self.path) }
}

let testTopic = "com.example.app"
let testToken = String(repeating: "ab", count: 32)

/// Runs `body` against a started gateway and always shuts it down.
func withGateway<Result>(
    directory: String,
    key: TestProviderKey,
    sink: any DeliverySink = InMemoryDeliverySink(),
    clock: TestClock? = nil,
    configure: (inout GatewayConfiguration) -> Void = { _ in },
    _ body: (APNsGatewayServer, Int) async throws -> Result
) async throws -> Result {
    var configuration = GatewayConfiguration(
        tlsDirectory: (directory as NSString).appendingPathComponent("tls"),
        topics: [testTopic],
        providerKeys: [key.registered()]
    )
    if let clock { configuration.clock = clock.wallClock }
    configure(&configuration)
    var logger = Logger(label: "gateway-test")
    logger.logLevel = .warning
    let server = APNsGatewayServer(configuration: configuration, sink: sink, logger: logger)
    let port = try await server.start()
    do {
        let result = try await body(server, port)
        try await server.shutdown()
        return result
    } catch {
        try? await server.shutdown()
        throw error
    }
}

/// The headers of a valid alert push.
func alertHeaders(authorization: String, apnsID: String? = nil) -> [(String, String)] {
    var headers = [
        ("authorization", authorization),
        ("apns-push-type", "alert"),
        ("apns-topic", testTopic),
        ("apns-priority", "10"),
        ("apns-expiration", "0"),
    ]
    if let apnsID { headers.append(("apns-id", apnsID)) }
    return headers
}

let sampleBody = Array(#"{"aps":{"alert":{"title":"New message"},"mutable-content":1},"e2ee":"AAEC"}"#.utf8)
