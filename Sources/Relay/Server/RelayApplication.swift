public import ConnectionGuard
import Foundation
public import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
public import Logging
public import NIOSSL
public import RelayClient
import ServiceLifecycle

/// Everything `e2ee-relay serve` needs, checked by the CLI before the relay starts.
public struct RelayConfiguration: Sendable {
    /// Where the relay keeps its state: a `--database` value, opened by the first of ``RelayStoreKinds/all`` that
    /// accepts it.
    public struct Database: Sendable, Hashable {
        /// The value as `--database` takes it: a file path, a `postgres://` URL.
        public let argument: String

        public init(argument: String) { self.argument = argument }

        /// An embedded SQLite file (one relay process).
        public static func sqlite(path: String) -> Self { Self(argument: path) }
        /// A PostgreSQL URL (`postgres://user[:password]@host:port/database`), shared by several relays.
        public static func postgres(url: String) -> Self { Self(argument: url) }

        /// The kind of store of ``argument``.
        public var kind: any RelayStoreKind {
            // SQLite, last in the list, accepts every value.
            RelayStoreKinds.kind(for: self.argument) ?? SQLiteStoreKind()
        }
    }

    public var database: Database
    public var host = "127.0.0.1"
    /// 0 picks a free port (written to ``portFile``).
    public var port = 8443
    public var portFile: String?
    /// The TLS server configuration (``RelayTLS``).
    public var tls: TLSConfiguration
    public var policy = RelayService.Policy()
    public var delivery = DeliveryService.Configuration()
    /// Socket deadlines and the connection cap (docs/RELAY.md "Connections").
    public var connections = ConnectionLimits()
    /// A listener of its own for `GET /metrics` (plain HTTP), instead of the API's; nil: the API serves it.
    public var metricsListener: (host: String, port: Int)?

    /// Where the TLS certificate comes from.
    public enum TLS: Sendable, Hashable {
        case files(certificate: String, key: String)
        case selfSigned(directory: String)

        /// The server configuration (``RelayTLS``).
        public func load() throws(RelayError) -> TLSConfiguration {
            switch self {
            case .files(let certificate, let key): try RelayTLS.load(certificatePath: certificate, keyPath: key)
            case .selfSigned(let directory): try RelayTLS.selfSigned(directory: directory).0
            }
        }
    }

    public init(database: Database, tls: TLSConfiguration) {
        self.database = database
        self.tls = tls
    }
}

/// Builds the relay: the store, the API service, the delivery workers and the HTTPS server (HTTP/2 + HTTP/1.1).
public enum RelayApplication: Sendable {
    /// HTTPS with ALPN (HTTP/2, else HTTP/1.1), every connection under `tracker`'s limits, and every request
    /// reported to its connection's deadlines and bounded by the request timeout.
    private static func server(
        _ tls: TLSConfiguration,
        tracker: ConnectionTracker
    ) throws(RelayError) -> HTTPServerBuilder {
        // Checked here so that an unusable certificate is a start-up error, not a failure of every connection.
        do {
            _ = try NIOSSLContext(configuration: tls)
        } catch {
            throw RelayError(.configuration, "the TLS configuration is not usable: \(error)")
        }
        let limits = tracker.limits
        return HTTPServerBuilder { responder in
            let tracked: HTTPChannelHandler.Responder = { request, writer, channel in
                let activity = ConnectionActivity.start(on: channel, tracker: tracker)
                defer { activity.finish() }
                try await responder(request, writer, channel)
            }
            return GuardedChildChannel(
                base: try HTTP2UpgradeChannel(
                    tlsConfiguration: tls,
                    // An idle HTTP/2 connection gets the server's GOAWAY at the idle timeout.
                    configuration: .init(idleTimeout: limits.idleTimeout),
                    responder: tracked
                ),
                tracker: tracker
            )
        }
    }

    /// Runs `body` with the store named by the configuration, its schema created; the store is closed (its
    /// connections too) before this returns.
    ///
    /// - Throws: ``RelayError`` `configuration` (a malformed database URL) or `storage-unavailable` saying why the
    ///   store cannot be opened (file, lock, connection); else what `body` throws.
    public static func withStore<T>(
        _ database: RelayConfiguration.Database,
        logger: Logger,
        _ body: (any RelayStore) async throws -> T
    ) async throws -> T {
        try await database.kind.withStore(database.argument, options: ServeOptions(), logger: logger, body)
    }

    /// The Hummingbird application: the API router over TLS with the delivery service beside it.
    ///
    /// - Parameters:
    ///   - service: The API decisions.
    ///   - delivery: The delivery workers (run and drained with the server), or nil for an API-only relay.
    ///   - configuration: Host, port, port file and TLS.
    ///   - logger: The server's logger.
    ///   - connections: Tracks the server's connections under `configuration.connections` (made here when nil); a
    ///     caller that passes its own can wait for them to close after the server stops.
    public static func make(
        service: RelayService,
        delivery: DeliveryService?,
        configuration: RelayConfiguration,
        connections: ConnectionTracker? = nil,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        logger: Logger
    ) throws(RelayError) -> some ApplicationProtocol {
        let portFile = configuration.portFile
        let tracker = connections ?? ConnectionTracker(limits: configuration.connections)
        let server = try Self.server(configuration.tls, tracker: tracker)
        var services: [any Service] = delivery.map { [$0] } ?? []
        if let listener = configuration.metricsListener {
            services.append(
                Application(
                    router: RelayRouter.buildMetrics(service: service),
                    server: .http1(configuration: .init(idleTimeout: .seconds(60))),
                    configuration: .init(
                        address: .hostname(listener.host, port: listener.port),
                        serverName: "e2ee-relay"
                    ),
                    onServerRunning: { channel in
                        logger.info(
                            "e2ee-relay metrics listening",
                            metadata: ["port": "\(channel.localAddress?.port ?? listener.port)"]
                        )
                    },
                    logger: logger
                )
            )
        }
        return Application(
            router: RelayRouter.build(
                service: service,
                delivery: delivery,
                metricsOnAPI: configuration.metricsListener == nil
            ),
            server: server,
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: "e2ee-relay",
                availableConnectionsDelegate: TrackedConnections(tracker: tracker)
            ),
            services: services,
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                if let portFile {
                    try? Data("\(port)\n".utf8).write(to: URL(fileURLWithPath: portFile), options: .atomic)
                }
                logger.info("e2ee-relay listening", metadata: ["port": "\(port)"])
                await onRunning(port)
            },
            logger: logger
        )
    }
}
