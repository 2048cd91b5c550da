import Foundation
import Locking
package import Logging
package import NIOCore
import NIOHTTP2
import NIOPosix
package import NIOSSL
import Synchronization

/// Keeps a client's one HTTP/2 connection to its server: opens it on first use, and opens a new one when the current one
/// has received GOAWAY, closed, or spent its stream IDs.
///
/// Requests may be submitted to a connection that is still connecting: they wait in its inbox and are sent when TLS
/// (ALPN `h2`) is up. A connection that cannot be established answers them with
/// ``HTTP2StreamOutcome/connectFailed(_:)``.
package final class HTTP2ClientPool: Sendable {
    /// Where to connect and what to put in `:authority` and `:path`.
    package struct Target: Sendable {
        package var host: String
        package var port: Int
        /// The TLS server name (SNI and certificate check); `nil` for an IP address, checked against the address.
        package var serverHostname: String?
        package var authority: String
        /// The base URL's path ("" or "/prefix"), placed before the request's own path.
        package var pathPrefix: String

        /// - Parameter baseURL: An `https` URL with a host and no query, checked by the caller.
        package init(baseURL: String) {
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
        var current: HTTP2ClientConnection?
        /// Every channel from its creation (before its connect completes) until it closes.
        var channels: [ObjectIdentifier: any Channel] = [:]
        var nextID = 1
        var isShutDown = false
    }

    package let target: Target
    private let peer: HTTP2Peer
    private let sslContext: NIOSSLContext
    private let group: any EventLoopGroup
    private let connectTimeout: TimeAmount
    private let logger: Logger
    private let state = PThreadMutex(State())
    private let established = Atomic<Int>(0)

    package init(
        target: Target,
        peer: HTTP2Peer,
        sslContext: NIOSSLContext,
        group: any EventLoopGroup,
        connectTimeout: TimeAmount,
        logger: Logger
    ) {
        self.target = target
        self.peer = peer
        self.sslContext = sslContext
        self.group = group
        self.connectTimeout = connectTimeout
        self.logger = logger
    }

    /// How many connections completed their TLS handshake with ALPN `h2`.
    package var connectionsEstablished: Int { self.established.load(ordering: .relaxed) }

    /// The connection to send on, opening one if there is none in use; `nil` once the pool is shut down.
    package func connection() -> HTTP2ClientConnection? {
        let (connection, isNew): (HTTP2ClientConnection?, Bool) = self.state.withLock { state in
            if state.isShutDown { return (nil, false) }
            if let current = state.current, current.isUsable { return (current, false) }
            let connection = HTTP2ClientConnection(id: state.nextID, eventLoop: self.group.next())
            state.nextID += 1
            state.current = connection
            return (connection, true)
        }
        if let connection, isNew { self.connect(connection) }
        return connection
    }

    /// Closes every connection, including ones still connecting or in their TLS handshake; requests in flight end as
    /// failed, queued ones as not sent (or connect-failed, for a connection that never came up).
    package func shutdown() async {
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

    private func connect(_ connection: HTTP2ClientConnection) {
        let target = self.target
        let sslContext = self.sslContext
        let logger = self.logger
        let peer = self.peer
        let connectTimeout = self.connectTimeout
        let established = { @Sendable [self] in
            self.established.add(1, ordering: .relaxed)
            logger.info(
                "connected to \(peer.name) over HTTP/2",
                metadata: [
                    "\(peer.logPrefix).connection": "\(connection.id)",
                    "\(peer.logPrefix).host": "\(target.host):\(target.port)",
                ]
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
                            connectionConfiguration: Self.connectionConfiguration(peer),
                            streamConfiguration: .init()
                        )
                    )
                    try sync.addHandler(
                        HTTP2ClientHandler(
                            connection: connection,
                            peer: peer,
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
                    // happens before it is active, so NIO fires no channelInactive: end the queued requests explicitly.
                    channel.close(promise: nil)
                    connection.connectFailed("the client was shut down while connecting")
                case .failure(let error):
                    let isShutDown = self.state.withLock { $0.isShutDown }
                    let reason =
                        isShutDown
                        ? "the client was shut down while connecting"
                        : "cannot connect to \(target.host):\(target.port): \(HTTP2ClientHandler.describe(error))"
                    if !isShutDown {
                        logger.warning(
                            "HTTP/2 connection to \(peer.name) failed",
                            metadata: ["\(peer.logPrefix).connection": "\(connection.id)"]
                        )
                    }
                    connection.connectFailed(reason)
                }
            }
    }

    /// This client's SETTINGS: NIO's defaults, with each stream's receive window large enough for a whole answer.
    private static func connectionConfiguration(_ peer: HTTP2Peer) -> NIOHTTP2Handler.ConnectionConfiguration {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        let window = HTTP2ClientHandler.initialStreamWindow(for: peer)
        // HTTP/2's default is 65,535: announced only when larger, so APNs sees the same SETTINGS as before.
        guard window > 65_535 else { return configuration }
        configuration.initialSettings.removeAll { $0.parameter == .initialWindowSize }
        configuration.initialSettings.append(HTTP2Setting(parameter: .initialWindowSize, value: window))
        return configuration
    }

    /// Sends one request on the current connection (opening one if needed) and waits for its outcome; cancelling the
    /// task resets its stream. `nil` once the pool is shut down.
    package func send(_ request: HTTP2PendingRequest) async -> HTTP2StreamOutcome? {
        guard let connection = self.connection() else { return nil }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<HTTP2StreamOutcome, Never>) in
                request.arm(continuation)
                connection.submit(request)
                // A cancel that arrived before the submit found nothing to cancel: repeat it now that it is in.
                if Task.isCancelled { connection.cancel(request) }
            }
        } onCancel: {
            connection.cancel(request)
        }
    }
}
