import APNsGateway
import Crypto
import Foundation
import Logging
import Sender

/// A real APNs gateway (TLS + HTTP/2 on 127.0.0.1, ephemeral port) and APNs clients that trust it.
final class GatewayFixture: Sendable {
    static let topic = "com.example.app"
    static let keyID = "ABC123DEFG"
    static let teamID = "DEF123GHIJ"

    let server: APNsGatewayServer
    let sink: InMemoryDeliverySink
    let folder: TemporaryFolder
    let port: Int
    let key: P256.Signing.PrivateKey

    private init(
        server: APNsGatewayServer,
        sink: InMemoryDeliverySink,
        folder: TemporaryFolder,
        port: Int,
        key: P256.Signing.PrivateKey
    ) {
        self.server = server
        self.sink = sink
        self.folder = folder
        self.port = port
        self.key = key
    }

    static func start(
        faults: FaultInjection = .none,
        devices: DeviceRegistry = DeviceRegistry()
    ) async throws -> GatewayFixture {
        let folder = try TemporaryFolder()
        let key = P256.Signing.PrivateKey()
        try FileManager.default.createDirectory(atPath: folder.file("tls"), withIntermediateDirectories: true)
        let configuration = GatewayConfiguration(
            tlsDirectory: folder.file("tls"),
            environment: .development,
            topics: [Self.topic],
            providerKeys: [RegisteredProviderKey(teamID: Self.teamID, keyID: Self.keyID, publicKey: key.publicKey)],
            devices: devices,
            faults: faults
        )
        let sink = InMemoryDeliverySink()
        let server = APNsGatewayServer(configuration: configuration, sink: sink, logger: Logger(label: "gateway"))
        let port = try await server.start()
        return GatewayFixture(server: server, sink: sink, folder: folder, port: port, key: key)
    }

    var baseURL: String { "https://127.0.0.1:\(self.port)" }

    /// Runs `body` with a started gateway and stops it however `body` ends.
    static func with<T>(
        faults: FaultInjection = .none,
        devices: DeviceRegistry = DeviceRegistry(),
        _ body: (GatewayFixture) async throws -> T
    ) async throws -> T {
        let gateway = try await GatewayFixture.start(faults: faults, devices: devices)
        return try await withCleanup(gateway, { await $0.stop() }, body)
    }

    /// The configuration of an APNs client for this gateway that never retries by itself (the relay schedules
    /// retries durably). The connect timeout is long: under a sanitizer on shared cores a loopback TLS handshake can
    /// take seconds, and a test waits for an event, it does not time it.
    func clientConfiguration(
        baseURL: String? = nil,
        connectTimeout: Duration = .seconds(60)
    ) throws -> APNsClientConfiguration {
        try APNsClientConfiguration(
            environment: .custom(baseURL: baseURL ?? self.baseURL, trustedCAPEMPath: self.server.caCertificatePath),
            keyID: Self.keyID,
            teamID: Self.teamID,
            signingKey: APNsSigningKey(privateKey: self.key),
            // Answers can be slow under a sanitizer too; no relay test is about the stream timeout.
            streamTimeout: .seconds(120),
            connectTimeout: connectTimeout,
            retryPolicy: .never
        )
    }

    /// Runs `body` with an APNs client for this gateway and shuts the client down however `body` ends.
    /// `baseURL` points the client elsewhere (a closed port: APNs unreachable; a waiting push fails only after the
    /// connect timeout, so such a client passes a short one).
    func withClient<T>(
        baseURL: String? = nil,
        connectTimeout: Duration = .seconds(60),
        logger: Logger = Logger(label: "apns"),
        _ body: (APNsClient) async throws -> T
    ) async throws -> T {
        let configuration = try self.clientConfiguration(baseURL: baseURL, connectTimeout: connectTimeout)
        let client = APNsClient(configuration: configuration, logger: logger)
        return try await withCleanup(client, { await $0.shutdown() }, body)
    }

    /// Writes the provider key as a 0600 `.p8` file (for relay processes).
    func writeKeyFile() throws -> String {
        let path = self.folder.file("AuthKey_\(Self.keyID).p8")
        _ = FileManager.default.createFile(
            atPath: path,
            contents: Data(self.key.pemRepresentation.utf8),
            attributes: [.posixPermissions: 0o600]
        )
        return path
    }

    func stop() async {
        try? await self.server.shutdown()
        self.folder.cleanup()
    }
}
