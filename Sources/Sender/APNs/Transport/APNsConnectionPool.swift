import Foundation
import Locking
import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// Keeps the client's one HTTP/2 connection to APNs: opens it on first use, and opens a new one when the current one
/// has received GOAWAY, closed, or spent its stream IDs.
///
/// Pushes may be submitted to a connection that is still connecting: they wait in its inbox and are sent when TLS
/// (ALPN `h2`) is up. A connection that cannot be established answers them with
/// ``APNsStreamOutcome/connectFailed(_:)``.
final class APNsConnectionPool: Sendable {
    /// Where to connect and what to put in `:authority` and `:path`.
    struct Target: Sendable {
        var host: String
        var port: Int
        /// The TLS server name (SNI and certificate check); `nil` for an IP address, checked against the address.
        var serverHostname: String?
        var authority: String
        /// The base URL's path ("" or "/prefix"), placed before `/3/device/<token>`.
        var pathPrefix: String

        init(baseURL: String) {
            // APNsClientConfiguration has checked the URL (https, a host, no query).
            let url = URL(string: baseURL)
            var host = url?.host ?? "localhost"
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            let isIPAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
            let hostInAuthority = host.contains(":") ? "[\(host)]" : host
            self.host = host
            self.port = url?.port ?? 443
            self.serverHostname = isIPAddress ? nil : host
            self.authority = url?.port.map { "\(hostInAuthority):\($0)" } ?? hostInAuthority
            let path = url?.path ?? ""
            self.pathPrefix = path.hasSuffix("/") ? String(path.dropLast()) : path
        }
    }

    private struct State {
        var current: APNsConnection?
        /// Every channel from its creation (before its connect completes) until it closes.
        var channels: [ObjectIdentifier: any Channel] = [:]
        var nextID = 1
        var isShutDown = false
    }

    let target: Target
    private let sslContext: NIOSSLContext
    private let group: any EventLoopGroup
    private let connectTimeout: TimeAmount
    private let logger: Logger
    private let state = PThreadMutex(State())
    private let established = Atomic<Int>(0)

    init(
        target: Target,
        sslContext: NIOSSLContext,
        group: any EventLoopGroup,
        connectTimeout: TimeAmount,
        logger: Logger
    ) {
        self.target = target
        self.sslContext = sslContext
        self.group = group
        self.connectTimeout = connectTimeout
        self.logger = logger
    }

    /// How many connections completed their TLS handshake with ALPN `h2`.
    var connectionsEstablished: Int { self.established.load(ordering: .relaxed) }

    /// The connection to send on, opening one if there is none in use; `nil` once the pool is shut down.
    func connection() -> APNsConnection? {
        let (connection, isNew): (APNsConnection?, Bool) = self.state.withLock { state in
            if state.isShutDown { return (nil, false) }
            if let current = state.current, current.isUsable { return (current, false) }
            let connection = APNsConnection(id: state.nextID, eventLoop: self.group.next())
            state.nextID += 1
            state.current = connection
            return (connection, true)
        }
        if let connection, isNew { self.connect(connection) }
        return connection
    }

    /// Closes every connection, including ones still connecting or in their TLS handshake; pushes in flight end as
    /// failed, queued ones as not sent (or connect-failed, for a connection that never came up).
    func shutdown() async {
        let channels: [any Channel] = self.state.withLock { state in
            state.isShutDown = true
            state.current?.retire()
            return Array(state.channels.values)
        }
        let closes = channels.map { $0.close() }
        for close in closes {
            try? await close.get()
        }
    }

    /// Records a new channel so that ``shutdown()`` closes it; `false` once the pool is shut down.
    private func register(_ channel: any Channel) -> Bool {
        let key = ObjectIdentifier(channel)
        let registered = self.state.withLock { state in
            guard !state.isShutDown else { return false }
            state.channels[key] = channel
            return true
        }
        if registered {
            channel.closeFuture.whenComplete { _ in
                self.state.withLock { _ = $0.channels.removeValue(forKey: key) }
            }
        }
        return registered
    }

    private func connect(_ connection: APNsConnection) {
        let target = self.target
        let sslContext = self.sslContext
        let logger = self.logger
        let connectTimeout = self.connectTimeout
        let established = { @Sendable [self] in
            self.established.add(1, ordering: .relaxed)
            logger.info(
                "connected to APNs over HTTP/2",
                metadata: ["apns.connection": "\(connection.id)", "apns.host": "\(target.host):\(target.port)"]
            )
        }
        ClientBootstrap(group: connection.eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    // A channel created after shutdown() began is not connected at all; one created before is
                    // closed by it, whatever state its connect or handshake is in.
                    guard self.register(channel) else { throw ChannelError.ioOnClosedChannel }
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: target.serverHostname))
                    try sync.addHandler(
                        NIOHTTP2Handler(
                            mode: .client,
                            connectionConfiguration: .init(),
                            streamConfiguration: .init()
                        )
                    )
                    try sync.addHandler(
                        APNsConnectionHandler(
                            connection: connection,
                            connectTimeout: connectTimeout,
                            logger: logger,
                            onEstablished: established
                        )
                    )
                }
            }
            .connect(host: target.host, port: target.port)
            .whenComplete { [self] result in
                switch result {
                case .success(let channel):
                    let isShutDown = self.state.withLock { $0.isShutDown }
                    guard isShutDown else { return }
                    // shutdown() closes this channel too; closing it here, inside the connect promise's callback,
                    // happens before it is active, so NIO fires no channelInactive: end the queued pushes explicitly.
                    channel.close(promise: nil)
                    connection.connectFailed("the client was shut down while connecting")
                case .failure(let error):
                    let isShutDown = self.state.withLock { $0.isShutDown }
                    let reason =
                        isShutDown
                        ? "the client was shut down while connecting"
                        : "cannot connect to \(target.host):\(target.port): \(APNsConnectionHandler.describe(error))"
                    if !isShutDown {
                        logger.warning("APNs connection failed", metadata: ["apns.connection": "\(connection.id)"])
                    }
                    connection.connectFailed(reason)
                }
            }
    }
}
