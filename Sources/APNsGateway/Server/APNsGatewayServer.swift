public import ConnectionGuard
import Locking
public import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

/// A local stand-in for Apple's APNs HTTP/2 endpoint: TLS 1.2+ with ALPN `h2` on loopback, validating every
/// request as APNs does and handing accepted pushes to a ``DeliverySink``.
///
/// At ``start()`` the server makes a fresh CA and server certificate (for `localhost` and `127.0.0.1`), writes
/// `ca.pem` into the configured TLS directory for clients to trust, and binds. Each connection starts with
/// `SETTINGS_MAX_CONCURRENT_STREAMS` = 1 and is raised to ``GatewayConfiguration/maxConcurrentStreams`` once a
/// request with a valid provider token has succeeded. A push is answered `200` only after the sink has stored it.
///
/// The server is also a swift-service-lifecycle `Service`: ``run()`` starts it and shuts it down on graceful
/// shutdown.
public final class APNsGatewayServer: Sendable {
    private struct State {
        var started = false
        var serverChannel: (any Channel)?
        var connections: [ObjectIdentifier: any Channel] = [:]
        var port: Int?
    }

    /// The configuration the server was made with.
    public let configuration: GatewayConfiguration
    private let sink: any DeliverySink
    private let logger: Logger
    private let state = PThreadMutex(State())
    private let devices: PThreadMutex<DeviceRegistry>
    private let group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    /// Every open connection, under ``GatewayConfiguration/connections``.
    public let connections: ConnectionTracker

    /// Creates a server; nothing is bound or written until ``start()``.
    ///
    /// - Parameters:
    ///   - configuration: Where to listen and what to accept.
    ///   - sink: Where accepted pushes go.
    ///   - logger: Receives request outcomes at debug level (never tokens, JWTs or bodies).
    public init(configuration: GatewayConfiguration, sink: any DeliverySink, logger: Logger) {
        self.configuration = configuration
        self.sink = sink
        self.logger = logger
        self.devices = PThreadMutex(configuration.devices)
        self.connections = ConnectionTracker(limits: configuration.connections)
    }

    /// The CA certificate (PEM) a client must trust: `<tlsDirectory>/ca.pem`, written by ``start()``.
    public var caCertificatePath: String { self.configuration.caCertificatePath }

    /// The bound port once started, else `nil`.
    public var port: Int? { self.state.withLock { $0.port } }

    /// The device registry in force now.
    public var deviceRegistry: DeviceRegistry { self.devices.withLock { $0 } }

    /// Changes the device registry while running, e.g. to unregister a token mid-test.
    ///
    /// - Parameter update: Edits the registry; later requests see the result.
    public func updateDevices(_ update: (inout DeviceRegistry) -> Void) {
        self.devices.withLock { update(&$0) }
    }

    /// Makes the certificates, writes `ca.pem`, and starts listening.
    ///
    /// - Returns: The bound port (useful with port `0`).
    /// - Throws: ``GatewayError`` when the configuration is invalid (`invalidConfiguration`), the certificates
    ///   cannot be made or written (`tlsSetupFailed`), the sink cannot report its last sequence
    ///   (`deliveryFailed`), the port cannot be bound (`bindFailed`), or the server was started before
    ///   (`alreadyStarted`).
    public func start() async throws -> Int {
        try self.configuration.validate()
        try self.state.withLock { (state: inout State) throws(GatewayError) in
            guard !state.started else {
                throw GatewayError(code: .alreadyStarted, message: "the gateway is already started: start it once")
            }
            state.started = true
        }
        let channel: any Channel
        do {
            channel = try await self.bind()
        } catch {
            // A failed start may be retried (e.g. after freeing the port).
            self.state.withLock { $0.started = false }
            throw error
        }
        let port = channel.localAddress?.port ?? self.configuration.port
        self.state.withLock {
            $0.serverChannel = channel
            $0.port = port
        }
        self.logger.info(
            "APNs gateway listening",
            metadata: [
                "host": "\(self.configuration.host)", "port": "\(port)",
                "environment": "\(self.configuration.environment.rawValue)", "ca": "\(self.caCertificatePath)",
            ]
        )
        return port
    }

    /// Stops listening and closes every connection; pushes already answered are in the sink.
    ///
    /// - Throws: Nothing today; kept `throws` so closing can report errors later.
    public func shutdown() async throws {
        let (server, connections) = self.state.withLock { state in
            let result = (state.serverChannel, Array(state.connections.values))
            state.serverChannel = nil
            state.connections = [:]
            return result
        }
        if let server { try? await server.close() }
        for connection in connections { try? await connection.close() }
        if server != nil { self.logger.info("APNs gateway stopped") }
    }

    /// Makes the certificates, writes them, asks the sink where to continue, and binds.
    private func bind() async throws(GatewayError) -> any Channel {
        let certificates = try GatewayCertificates.make()
        try certificates.write(
            caPath: self.configuration.caCertificatePath,
            serverPath: self.configuration.serverCertificatePath
        )
        let lastSeq: Int
        do {
            lastSeq = try await self.sink.lastSequence()
        } catch {
            throw GatewayError(
                code: .deliveryFailed,
                message: "the delivery sink cannot report its last sequence number: \(error)"
            )
        }
        let processor = self.makeProcessor(lastSeq: lastSeq)
        do {
            return try await self.makeBootstrap(sslContext: certificates.sslContext, processor: processor)
                .bind(host: self.configuration.host, port: self.configuration.port)
                .get()
        } catch {
            throw GatewayError(
                code: .bindFailed,
                message:
                    "cannot listen on \(self.configuration.host):\(self.configuration.port): \(error); pick another port or 0"
            )
        }
    }

    private func makeProcessor(lastSeq: Int) -> RequestProcessor {
        let configuration = self.configuration
        return RequestProcessor(
            validator: RequestValidator(environment: configuration.environment, topics: configuration.topics),
            verifier: ProviderTokenVerifier(
                keys: configuration.providerKeys,
                environment: configuration.environment,
                policy: configuration.tokenPolicy
            ),
            faults: FaultInjector(configuration.faults),
            pipeline: DeliveryPipeline(sink: self.sink, lastSeq: lastSeq),
            devices: { [devices = self] in devices.deviceRegistry },
            clock: configuration.clock,
            logger: self.logger
        )
    }

    private func makeBootstrap(sslContext: NIOSSLContext, processor: RequestProcessor) -> ServerBootstrap {
        let configuration = self.configuration
        let connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration = {
            var connection = NIOHTTP2Handler.ConnectionConfiguration()
            connection.initialSettings = [
                HTTP2Setting(parameter: .maxConcurrentStreams, value: GatewayConnection.initialMaxConcurrentStreams),
                HTTP2Setting(parameter: .maxHeaderListSize, value: 16 * 1024),
            ]
            return connection
        }()
        let tracker = self.connections
        return ServerBootstrap(group: self.group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    // A failing accept (no file descriptor left) waits a second instead of spinning; the cap keeps
                    // that from happening at all while the descriptor limit is above it.
                    try channel.pipeline.syncOperations.addHandler(
                        AcceptBackoffHandler(shouldForwardIOErrorCaught: false)
                    )
                    try channel.pipeline.syncOperations.addHandler(ConnectionCapHandler(tracker: tracker))
                }
            }
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let connection = GatewayConnection(
                        channel: channel,
                        maxConcurrentStreams: configuration.maxConcurrentStreams,
                        faults: configuration.faults
                    )
                    self.track(channel)
                    tracker.track(channel)
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                    try sync.addHandler(ConnectionDeadlineHandler(tracker: tracker))
                    _ = try sync.configureHTTP2Pipeline(
                        mode: .server,
                        connectionConfiguration: connectionConfiguration,
                        streamConfiguration: NIOHTTP2Handler.StreamConfiguration()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(
                                GatewayStreamHandler(
                                    processor: processor,
                                    connection: connection,
                                    environment: configuration.environment,
                                    tracker: tracker
                                )
                            )
                        }
                    }
                    try sync.addHandler(ConnectionErrorHandler(logger: self.logger))
                }
            }
    }

    private func track(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        self.state.withLock { $0.connections[id] = channel }
        channel.closeFuture.whenComplete { [self] _ in
            self.state.withLock { _ = $0.connections.removeValue(forKey: id) }
        }
    }
}

/// Logs and closes a connection on a connection error (TLS or HTTP/2 protocol) that reached the end of its pipeline.
private final class ConnectionErrorHandler: ChannelInboundHandler {
    typealias InboundIn = Any
    let logger: Logger

    init(logger: Logger) { self.logger = logger }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Root-stream frames (SETTINGS, PING, GOAWAY) are handled by the HTTP/2 handler; nothing to do.
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOHTTP2Errors.StreamError {
            // A single stream failed (e.g. refused over the stream limit); the connection goes on.
            self.logger.debug("stream error", metadata: ["error": "\(error)"])
            return
        }
        self.logger.debug("connection error; closing", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension ConnectionErrorHandler: Sendable {}
