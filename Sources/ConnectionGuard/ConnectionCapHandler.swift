public import NIOCore

/// On a server channel: accepts a new connection only while the ``ConnectionTracker`` admits another (the cap,
/// making room by closing the connection idle longest), and resumes accepting when a connection closes.
///
/// For servers built on NIO's `ServerBootstrap` directly; a Hummingbird server gets the same decision through its
/// `AvailableConnectionsDelegate`. Put NIO's `AcceptBackoffHandler` in front of it, so that a failing `accept` (no file
/// descriptor left) backs off instead of spinning.
public final class ConnectionCapHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = any Channel
    public typealias InboundOut = any Channel
    public typealias OutboundIn = Never
    public typealias OutboundOut = Never

    private let tracker: ConnectionTracker
    private var waiting = false

    public init(tracker: ConnectionTracker) {
        self.tracker = tracker
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let child = self.unwrapInboundIn(data)
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        child.closeFuture.hop(to: context.eventLoop).whenComplete { _ in
            let (handler, context) = bound.value
            guard handler.waiting, handler.tracker.admitsAnother() else { return }
            handler.waiting = false
            context.read()
        }
        context.fireChannelRead(data)
    }

    public func read(context: ChannelHandlerContext) {
        guard self.tracker.admitsAnother() else {
            self.waiting = true
            return
        }
        context.read()
    }
}

@available(*, unavailable)
extension ConnectionCapHandler: Sendable {}
