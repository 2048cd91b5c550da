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

    /// An APNs client for this gateway that never retries by itself (the relay schedules retries durably).
    func makeClient() throws -> APNsClient {
        APNsClient(
            configuration: try APNsClientConfiguration(
                environment: .custom(baseURL: self.baseURL, trustedCAPEMPath: self.server.caCertificatePath),
                keyID: Self.keyID,
                teamID: Self.teamID,
                signingKey: APNsSigningKey(privateKey: self.key),
                retryPolicy: .never
            ),
            logger: Logger(label: "apns")
        )
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
