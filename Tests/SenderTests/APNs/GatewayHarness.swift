import APNsGateway
import Crypto
import Foundation
import Locking
import Logging
import TestSupport

@testable import Sender

/// A real APNs gateway (TLS + HTTP/2 on 127.0.0.1, ephemeral port) with one registered provider key, and clients
/// that trust its CA. ``with(faults:devices:registeredKey:keyEnvironment:gatewayClock:_:)`` shuts every client and
/// the gateway down however the test body ends.
final class GatewayHarness: Sendable {
    static let topic = "com.example.app"
    static let deviceToken = String(repeating: "a1b2c3d4", count: 8)
    /// Generous, because CI runs the tests under AddressSanitizer with many gateways and TLS handshakes at once on
    /// two cores, where the client's default 10 s expired before a handshake finished. No test here is about the
    /// connect timeout (APNsClientConfigurationTests sets its own).
    static let connectTimeout: Duration = .seconds(60)
    /// Generous for the same reason: under AddressSanitizer one of 500 pushes through one window of 100 waited more
    /// than 20 s for its answer. Tests about the stream timeout set their own.
    static let streamTimeout: Duration = .seconds(120)

    let server: APNsGatewayServer
    let sink: InMemoryDeliverySink
    let folder: TemporaryFolder
    let port: Int
    let signingKey: APNsSigningKey
    let gatewayClock: TestClock
    private let clients = PThreadMutex<[APNsClient]>([])

    private init(
        server: APNsGatewayServer,
        sink: InMemoryDeliverySink,
        folder: TemporaryFolder,
        port: Int,
        signingKey: APNsSigningKey,
        gatewayClock: TestClock
    ) {
        self.server = server
        self.sink = sink
        self.folder = folder
        self.port = port
        self.signingKey = signingKey
        self.gatewayClock = gatewayClock
    }

    /// Runs `body` with a started gateway, then shuts down its clients and the gateway.
    static func with(
        faults: FaultInjection = .none,
        devices: DeviceRegistry = DeviceRegistry(),
        registeredKey: P256.Signing.PublicKey? = nil,
        keyEnvironment: APNsEnvironment? = nil,
        gatewayClock: TestClock = TestClock(Date()),
        _ body: (GatewayHarness) async throws -> Void
    ) async throws {
        let gateway = try await Self.start(
            faults: faults,
            devices: devices,
            registeredKey: registeredKey,
            keyEnvironment: keyEnvironment,
            gatewayClock: gatewayClock
        )
        do {
            try await body(gateway)
        } catch {
            await gateway.stop()
            throw error
        }
        await gateway.stop()
    }

    /// Starts a gateway.
    ///
    /// - Parameters:
    ///   - faults: Faults to inject.
    ///   - devices: The device registry.
    ///   - registeredKey: The public key the gateway trusts (default: the harness's signing key).
    ///   - keyEnvironment: The environment the key is registered for (`nil` = both).
    ///   - gatewayClock: The gateway's clock.
    private static func start(
        faults: FaultInjection = .none,
        devices: DeviceRegistry = DeviceRegistry(),
        registeredKey: P256.Signing.PublicKey? = nil,
        keyEnvironment: APNsEnvironment? = nil,
        gatewayClock: TestClock = TestClock(Date())
    ) async throws -> GatewayHarness {
        let folder = try TemporaryFolder()
        let key = P256.Signing.PrivateKey()
        let configuration = GatewayConfiguration(
            host: "127.0.0.1",
            port: 0,
            tlsDirectory: folder.file("tls"),
            environment: .development,
            topics: [Self.topic],
            providerKeys: [
                RegisteredProviderKey(
                    teamID: APNsTestKeys.teamID,
                    keyID: APNsTestKeys.keyID,
                    publicKey: registeredKey ?? key.publicKey,
                    environment: keyEnvironment
                )
            ],
            devices: devices,
            faults: faults,
            clock: gatewayClock.wallClock
        )
        try FileManager.default.createDirectory(atPath: folder.file("tls"), withIntermediateDirectories: true)
        let sink = InMemoryDeliverySink()
        let server = APNsGatewayServer(configuration: configuration, sink: sink, logger: Logger(label: "gateway"))
        let port = try await server.start()
        return GatewayHarness(
            server: server,
            sink: sink,
            folder: folder,
            port: port,
            signingKey: APNsSigningKey(privateKey: key),
            gatewayClock: gatewayClock
        )
    }

    /// A client for this gateway.
    func makeClient(
        window: Int = 100,
        streamTimeout: Duration = GatewayHarness.streamTimeout,
        connectTimeout: Duration = GatewayHarness.connectTimeout,
        retryPolicy: RetryPolicy = .never,
        registry: TokenRegistry = TokenRegistry(),
        clock: TestClock? = nil,
        pathPrefix: String = "",
        method: String = "POST",
        logger: Logger = Logger(label: "apns-client")
    ) throws -> APNsClient {
        let configuration = try APNsClientConfiguration(
            environment: .custom(
                baseURL: "https://127.0.0.1:\(self.port)\(pathPrefix)",
                trustedCAPEMPath: self.server.caCertificatePath
            ),
            keyID: APNsTestKeys.keyID,
            teamID: APNsTestKeys.teamID,
            signingKey: self.signingKey,
            window: window,
            streamTimeout: streamTimeout,
            connectTimeout: connectTimeout,
            retryPolicy: retryPolicy,
            tokenRegistry: registry,
            clock: clock?.wallClock ?? .system
        )
        let client = APNsClient(configuration: configuration, logger: logger, method: method)
        self.clients.withLock { $0.append(client) }
        return client
    }

    func stop() async {
        for client in self.clients.withLock({ $0 }) { await client.shutdown() }
        try? await self.server.shutdown()
        self.folder.cleanup()
    }

    /// A valid alert push; `change` edits its headers and body.
    static func push(
        token: String = deviceToken,
        body: String = #"{"aps":{"alert":{"title":"New message"},"mutable-content":1},"e2ee":"AAAA"}"#,
        _ change: (inout [String: String]) -> Void = { _ in }
    ) -> APNsRequest {
        var headers = [
            "apns-id": UUID().uuidString,
            "apns-push-type": "alert",
            "apns-topic": Self.topic,
            "apns-priority": "10",
            "apns-expiration": "0",
        ]
        change(&headers)
        return APNsRequest(deviceToken: token, headers: headers, body: body)
    }
}
