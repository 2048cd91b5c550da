import NIOConcurrencyHelpers
public import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// A slowloris client: completes a TLS handshake with a loopback server (ALPN as asked), then sends its bytes one at a
/// time, slowly, and tells whether the server closed the connection.
public final class TLSTrickle: Sendable {
    private let channel: any Channel
    private let task: RepeatedTask

    private init(channel: any Channel, task: RepeatedTask) {
        self.channel = channel
        self.task = task
    }

    /// Connects to `127.0.0.1:port` trusting `caPath`, offers `alpn`, and once the handshake is done sends `bytes`
    /// one per `interval` (then nothing more, keeping the connection open).
    ///
    /// - Throws: What connecting or the handshake threw.
    public static func start(
        port: Int,
        caPath: String,
        alpn: [String],
        bytes: [UInt8],
        interval: TimeAmount = .milliseconds(200)
    ) async throws -> TLSTrickle {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(caPath)
        tls.applicationProtocols = alpn
        let context = try NIOSSLContext(configuration: tls)
        let group = MultiThreadedEventLoopGroup.singleton
        let handshake = group.next().makePromise(of: Void.self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: handshake.futureResult.eventLoop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: context, serverHostname: "localhost")
                        )
                        try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(done: handshake))
                    }
                }
                .connect(host: "127.0.0.1", port: port)
                .get()
        } catch {
            // The connection failed before the watcher could answer (or before it was added): a promise left
            // unanswered is a fatal error in NIO's debug builds, which would end the whole test process instead of
            // failing this test. A promise already answered ignores this.
            handshake.fail(error)
            throw error
        }
        try await handshake.futureResult.get()
        let remaining = NIOLockedValueBox(bytes[...])
        let task = channel.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { task in
            guard channel.isActive, let byte = remaining.withLockedValue({ $0.popFirst() }) else {
                task.cancel()
                return
            }
            channel.writeAndFlush(ByteBuffer(bytes: [byte]), promise: nil)
        }
        return TLSTrickle(channel: channel, task: task)
    }

    /// Whether the server closed the connection within `timeout`.
    public func closedByServer(within timeout: TimeAmount) async -> Bool {
        let closed = self.channel.eventLoop.makePromise(of: Bool.self)
        self.channel.closeFuture.whenComplete { _ in closed.succeed(true) }
        let timer = self.channel.eventLoop.scheduleTask(in: timeout) { closed.succeed(false) }
        let result = (try? await closed.futureResult.get()) ?? false
        timer.cancel()
        return result
    }

    /// Stops sending and closes the connection.
    public func close() {
        self.task.cancel()
        self.channel.close(promise: nil)
    }
}

/// Fulfils `done` when the TLS handshake completes (fails it if the connection goes away first).
private final class HandshakeWatcher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let done: EventLoopPromise<Void>

    init(done: EventLoopPromise<Void>) { self.done = done }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { self.done.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func channelInactive(context: ChannelHandlerContext) {
        self.done.fail(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.done.fail(error)
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension HandshakeWatcher: Sendable {}
