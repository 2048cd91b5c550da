public import NIOCore

/// How the HTTP layer tells a connection's ``ConnectionDeadlineHandler`` that a request started or finished, and
/// bounds each request by ``ConnectionLimits/requestTimeout``.
///
/// `channel` is the connection itself (HTTP/1.1) or one of its HTTP/2 streams (whose parent is the connection). Safe
/// from any thread: the work runs on the channel's event loop.
public struct ConnectionActivity: Sendable {
    private let channel: any Channel
    private let timeout: Scheduled<Void>

    /// A request's head is complete on `channel`: the connection's deadlines stop until it is answered, and the
    /// request's own deadline starts. Call ``finish()`` when it has been answered.
    ///
    /// - Parameters:
    ///   - channel: The connection (HTTP/1.1) or the stream (HTTP/2) the request arrived on.
    ///   - tracker: The server's connections; its ``ConnectionLimits/requestTimeout`` bounds the request.
    public static func start(on channel: any Channel, tracker: ConnectionTracker) -> ConnectionActivity {
        Self.onHandler(of: channel) { $0.requestStarted() }
        // A request not answered in time closes its channel: the stream of an HTTP/2 request (the connection's other
        // streams go on), the connection of an HTTP/1.1 one.
        let timeout = channel.eventLoop.scheduleTask(in: TimeAmount(tracker.limits.requestTimeout)) {
            tracker.count(.requestTimeout)
            channel.close(promise: nil)
        }
        return ConnectionActivity(channel: channel, timeout: timeout)
    }

    /// The whole request has arrived: its deadline (which bounds a client sending slowly) stops; what the server does
    /// with it from now on is the server's own time. The connection still counts it as in progress.
    public func received() {
        self.timeout.cancel()
    }

    /// The request was answered (or ended otherwise).
    ///
    /// On an HTTP/2 stream the request's deadline keeps running until the stream closes: a client that goes on sending
    /// the body of a request already answered (a 413 for a declared length over the limit) has its stream reset at the
    /// deadline, instead of holding it open.
    public func finish() {
        if self.channel.parent != nil {
            let timeout = self.timeout
            self.channel.closeFuture.whenComplete { _ in timeout.cancel() }
        } else {
            self.timeout.cancel()
        }
        Self.onHandler(of: self.channel) { $0.requestFinished() }
    }

    private static func onHandler(
        of channel: any Channel,
        _ body: @escaping @Sendable (ConnectionDeadlineHandler) -> Void
    ) {
        let work = { @Sendable in
            let handler =
                (try? channel.pipeline.syncOperations.handler(type: ConnectionDeadlineHandler.self))
                ?? channel.parent.flatMap {
                    try? $0.pipeline.syncOperations.handler(type: ConnectionDeadlineHandler.self)
                }
            if let handler { body(handler) }
        }
        if channel.eventLoop.inEventLoop { work() } else { channel.eventLoop.execute(work) }
    }
}
