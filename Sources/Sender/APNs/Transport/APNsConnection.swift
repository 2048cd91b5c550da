import Locking
import Logging
import NIOCore
import NIOHTTP2

/// One HTTP/2 connection to APNs as the rest of the client sees it: a thread-safe inbox of pushes in front of the
/// ``APNsConnectionHandler`` that owns the connection on its event loop.
///
/// Pushes submitted from any thread are appended to the inbox; the first push into an empty inbox schedules one
/// event-loop task that moves everything queued by then onto streams and flushes once. Under load, many pushes
/// share one task and one TLS flush.
final class APNsConnection: Sendable {
    private struct Inbox {
        var items: [APNsPendingPush] = []
        /// A drain task is scheduled (or the handler is not attached yet and will drain when it is).
        var drainScheduled = false
        var handler: NIOLoopBound<APNsConnectionHandler>?
        /// Set once the connection is gone: later pushes are answered at once with this outcome.
        var closedOutcome: APNsStreamOutcome?
    }

    /// A number for logs, unique within the client.
    let id: Int
    let eventLoop: any EventLoop
    private let inbox = PThreadMutex(Inbox())
    /// Cleared when the connection may take no new streams (GOAWAY, closed, stream IDs exhausted).
    private let usable = PThreadMutex(true)

    init(id: Int, eventLoop: any EventLoop) {
        self.id = id
        self.eventLoop = eventLoop
    }

    /// Whether new pushes may be sent on this connection.
    var isUsable: Bool { self.usable.withLock { $0 } }

    /// How many pushes wait in the inbox (not yet taken by the handler).
    var queuedCount: Int { self.inbox.withLock { $0.items.count } }

    /// Marks the connection as taking no new pushes; the pool opens another for later ones.
    func retire() {
        self.usable.withLock { $0 = false }
    }

    /// Queues a push; its outcome arrives through the push's continuation.
    func submit(_ push: APNsPendingPush) {
        enum Action {
            case none
            case drain(NIOLoopBound<APNsConnectionHandler>)
            case finish(APNsStreamOutcome)
        }
        let action: Action = self.inbox.withLock { inbox in
            if let outcome = inbox.closedOutcome { return .finish(outcome) }
            inbox.items.append(push)
            guard !inbox.drainScheduled, let handler = inbox.handler else { return .none }
            inbox.drainScheduled = true
            return .drain(handler)
        }
        switch action {
        case .none:
            break
        case .drain(let handler):
            self.eventLoop.execute { handler.value.drainInbox() }
        case .finish(let outcome):
            // Outcomes are delivered on the event loop only, so a concurrent cancel cannot race this one.
            self.eventLoop.execute { push.finish(outcome) }
        }
    }

    /// Asks the handler to cancel a push (reset its stream, or drop it from the queue).
    ///
    /// Safe to call at any time, even before ``submit(_:)``: the handler only acts on pushes it has taken from the
    /// inbox, so a cancel that arrives first finds nothing; the sender checks for cancellation again after
    /// submitting.
    func cancel(_ push: APNsPendingPush) {
        enum Action {
            case none
            case forward(NIOLoopBound<APNsConnectionHandler>)
            case finish
        }
        let action: Action = self.inbox.withLock { inbox in
            if let handler = inbox.handler { return .forward(handler) }
            guard let index = inbox.items.firstIndex(where: { $0 === push }) else { return .none }
            inbox.items.remove(at: index)
            return .finish
        }
        switch action {
        case .none:
            break
        case .forward(let handler):
            self.eventLoop.execute { handler.value.cancel(push) }
        case .finish:
            self.eventLoop.execute { push.finish(.cancelled) }
        }
    }

    /// Ends a connection that could not be established (or was closed before it became active): everything queued,
    /// and every later push, gets ``APNsStreamOutcome/connectFailed(_:)`` with `reason`.
    func connectFailed(_ reason: String) {
        self.eventLoop.execute {
            if let handler = self.inbox.withLock({ $0.handler }) {
                handler.value.fail(reason)
            } else {
                for push in self.closeInbox(with: .connectFailed(reason)) { push.finish(.connectFailed(reason)) }
            }
        }
    }

    // MARK: Called by the handler, on the event loop.

    /// Attaches the handler that owns the connection, when its channel becomes active; it drains what was queued
    /// meanwhile once TLS is up. Returns `false` if another handler is attached already or the inbox is closed
    /// (the caller then owns nothing here and closes its channel).
    func attach(_ handler: APNsConnectionHandler) -> Bool {
        self.eventLoop.preconditionInEventLoop()
        let bound = NIOLoopBound(handler, eventLoop: self.eventLoop)
        return self.inbox.withLock { inbox in
            guard inbox.handler == nil, inbox.closedOutcome == nil else { return false }
            inbox.handler = bound
            inbox.drainScheduled = true
            return true
        }
    }

    /// Removes a push still waiting in the inbox; returns whether it was there.
    func removeFromInbox(_ push: APNsPendingPush) -> Bool {
        self.inbox.withLock { inbox in
            guard let index = inbox.items.firstIndex(where: { $0 === push }) else { return false }
            inbox.items.remove(at: index)
            return true
        }
    }

    /// Takes everything queued so far; the next submit schedules a new drain.
    func takeInbox() -> [APNsPendingPush] {
        self.inbox.withLock { inbox in
            inbox.drainScheduled = false
            let items = inbox.items
            inbox.items = []
            return items
        }
    }

    /// Closes the inbox: later pushes get `outcome` at once. Returns what was still queued.
    func closeInbox(with outcome: APNsStreamOutcome) -> [APNsPendingPush] {
        self.retire()
        return self.inbox.withLock { inbox in
            inbox.closedOutcome = outcome
            let items = inbox.items
            inbox.items = []
            return items
        }
    }
}
