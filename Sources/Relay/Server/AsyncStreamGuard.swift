import NIOCore
import NIOSSL

/// Keeps a connection's HTTP/2 stream multiplexer from opening a stream after the server's loop over its streams has
/// ended: such a stream's `NIOAsyncChannel` is dropped unconsumed, which traps (`Deinited NIOAsyncWriter without
/// calling finish()`, SIGILL). Placed between TLS and HTTP/2 on every relay connection.
///
/// NIOHTTP2 ends the loop over inbound streams on any error that reaches it, and Hummingbird closes a connection from
/// inside a read (its graceful-shutdown PING answered, an error); the frames after that point in the same read are
/// still decoded, and a HEADERS frame among them opens a stream nobody takes. Under SIGTERM with senders connected
/// this crashed the relay in 6 of 20 rounds (RelayShutdownTests). So:
/// - a close asked for while a read is being processed waits until that read has been processed whole (the new stream
///   reaches the loop while it still runs, and is answered or closed like any other);
/// - a TLS EOF without close_notify is not an error for HTTP (its framing shows truncation) and is not passed on: the
///   half-close that follows it ends the connection normally;
/// - after any other error nothing more is read: the connection is closed.
final class AsyncStreamGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var reading = false
    private var failed = false
    /// The held close: the widest mode asked for, and the promise every held request completes with.
    private var held: (mode: CloseMode, promise: EventLoopPromise<Void>)?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.failed else { return }
        let outer = !self.reading
        self.reading = true
        context.fireChannelRead(data)
        guard outer else { return }
        self.reading = false
        if let (mode, promise) = self.held {
            self.held = nil
            context.close(mode: mode, promise: promise)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? NIOSSLError, case .uncleanShutdown = error { return }
        self.failed = true
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard self.reading else {
            context.close(mode: mode, promise: promise)
            return
        }
        let held = self.held ?? (mode: mode, promise: context.eventLoop.makePromise(of: Void.self))
        self.held = (mode: held.mode == .all || mode == .all ? .all : mode, promise: held.promise)
        if let promise { held.promise.futureResult.cascade(to: promise) }
    }
}

@available(*, unavailable)
extension AsyncStreamGuard: Sendable {}
