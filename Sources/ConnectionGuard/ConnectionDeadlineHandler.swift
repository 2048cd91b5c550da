public import NIOCore
import NIOTLS

/// Enforces one connection's deadlines (``ConnectionLimits``): placed right after the TLS handler, it sees the
/// handshake finish and is told by the HTTP layer (``ConnectionActivity``) when requests start and finish.
///
/// Bytes arriving reset nothing: a deadline is met only by a finished handshake or a complete request head, so a
/// client that trickles bytes is closed like one that sends none.
public final class ConnectionDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer

    private enum Phase {
        case handshaking
        case awaitingFirstRequest
        case serving(requests: Int)
    }

    private let tracker: ConnectionTracker
    /// Extra time an idle HTTP/2 connection gets after the idle timeout, for the server's own GOAWAY to close it
    /// gracefully first.
    private let http2IdleGrace: Duration
    /// How long a connection with nothing in progress stays open once the server is shutting down: time for the
    /// server's GOAWAY (HTTP/2) or its `Connection: close` to reach the client first.
    private let drainGrace: Duration
    private var phase = Phase.handshaking
    private var isHTTP2 = false
    /// Whether the server's loop took this connection (``serverTookConnection()``).
    private var taken: Bool
    private var draining = false
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    /// - Parameters:
    ///   - tracker: The server's connections (limits, phases, close reasons).
    ///   - http2IdleGrace: Added to the idle timeout of an HTTP/2 connection (default 0).
    ///   - drainGrace: How long an idle connection stays open once the server shuts down (default 1 s).
    ///   - awaitsServer: The server reports when its loop takes the connection (``serverTookConnection()``); until
    ///     then a shutdown closes it at once (default false: a server that owns every connection from accept).
    public init(
        tracker: ConnectionTracker,
        http2IdleGrace: Duration = .zero,
        drainGrace: Duration = .seconds(1),
        awaitsServer: Bool = false
    ) {
        self.tracker = tracker
        self.http2IdleGrace = http2IdleGrace
        self.drainGrace = drainGrace
        self.taken = !awaitsServer
    }

    /// The server's loop has taken the connection and reads its requests (on the event loop).
    public func serverTookConnection() {
        self.taken = true
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.arm(self.tracker.limits.handshakeTimeout, .handshakeTimeout)
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        self.timer?.cancel()
        self.timer = nil
        self.context = nil
    }

    public func channelInactive(context: ChannelHandlerContext) {
        self.timer?.cancel()
        self.timer = nil
        context.fireChannelInactive()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent, case .handshaking = self.phase {
            self.isHTTP2 = negotiated == "h2"
            self.phase = .awaitingFirstRequest
            if !self.draining { self.arm(self.tracker.limits.requestHeadTimeout, .requestHeadTimeout) }
        }
        context.fireUserInboundEventTriggered(event)
        if event is ChannelShouldQuiesceEvent { self.drain(context: context) }
    }

    /// The server shuts down: a connection its loop never took is closed now (nothing of it was read, and nobody will
    /// read it); one with nothing in progress after the grace; one with requests in progress when they are answered.
    private func drain(context: ChannelHandlerContext) {
        self.draining = true
        guard self.taken else {
            self.tracker.count(.shutdown)
            context.close(promise: nil)
            return
        }
        if case .serving(let requests) = self.phase, requests > 0 { return }
        self.arm(self.drainGrace, .shutdown)
    }

    /// A request's head is complete (on the event loop).
    func requestStarted() {
        let requests: Int
        switch self.phase {
        case .serving(let count): requests = count
        case .handshaking, .awaitingFirstRequest: requests = 0
        }
        self.phase = .serving(requests: requests + 1)
        self.timer?.cancel()
        self.timer = nil
        if let channel = self.context?.channel { self.tracker.enter(.busy, channel) }
    }

    /// A request was answered (or its stream ended) (on the event loop).
    func requestFinished() {
        guard case .serving(let count) = self.phase, count > 0 else { return }
        self.phase = .serving(requests: count - 1)
        guard count == 1 else { return }
        if let channel = self.context?.channel { self.tracker.enter(.idle, channel) }
        if self.draining {
            self.arm(self.drainGrace, .shutdown)
        } else {
            self.arm(self.tracker.limits.idleTimeout + (self.isHTTP2 ? self.http2IdleGrace : .zero), .idle)
        }
    }

    private func arm(_ delay: Duration, _ reason: ConnectionTracker.CloseReason) {
        self.timer?.cancel()
        guard let context = self.context else { return }
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        self.timer = context.eventLoop.scheduleTask(in: TimeAmount(delay)) {
            let (handler, context) = bound.value
            handler.timer = nil
            handler.tracker.count(reason)
            context.close(promise: nil)
        }
    }
}

@available(*, unavailable)
extension ConnectionDeadlineHandler: Sendable {}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
