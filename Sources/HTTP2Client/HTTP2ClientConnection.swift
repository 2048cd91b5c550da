import Locking
import Logging
package import NIOCore
import NIOHTTP2

/// One HTTP/2 connection as the rest of the client sees it: a thread-safe inbox of requests in front of the
/// ``HTTP2ClientHandler`` that owns the connection on its event loop.
///
/// Requests submitted from any thread are appended to the inbox; the first request into an empty inbox schedules one
/// event-loop task that moves everything queued by then onto streams and flushes once. Under load, many requests
/// share one task and one TLS flush.
package final class HTTP2ClientConnection: Sendable {
    private struct Inbox {
        var items: [HTTP2PendingRequest] = []
        /// A drain task is scheduled (or the handler is not attached yet and will drain when it is).
        var drainScheduled = false
        var handler: NIOLoopBound<HTTP2ClientHandler>?
        /// Set once the connection is gone: later requests are answered at once with this outcome.
        var closedOutcome: HTTP2StreamOutcome?
    }

    /// A number for logs, unique within the client.
    package let id: Int
    package let eventLoop: any EventLoop
    private let inbox = PThreadMutex(Inbox())
    /// Cleared when the connection may take no new streams (GOAWAY, closed, stream IDs exhausted).
    private let usable = PThreadMutex(true)

    package init(id: Int, eventLoop: any EventLoop) {
        self.id = id
        self.eventLoop = eventLoop
    }

    /// Whether new requests may be sent on this connection.
    package var isUsable: Bool { self.usable.withLock { $0 } }

    /// How many requests wait in the inbox (not yet taken by the handler).
    package var queuedCount: Int { self.inbox.withLock { $0.items.count } }

    /// Marks the connection as taking no new requests; the pool opens another for later ones.
    package func retire() {
        self.usable.withLock { $0 = false }
    }

    /// Queues a request; its outcome arrives through the request's continuation.
    package func submit(_ request: HTTP2PendingRequest) {
        enum Action {
            case none
            case drain(NIOLoopBound<HTTP2ClientHandler>)
            case finish(HTTP2StreamOutcome)
        }
        let action: Action = self.inbox.withLock { inbox in
            if let outcome = inbox.closedOutcome { return .finish(outcome) }
            inbox.items.append(request)
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
            self.eventLoop.execute { request.finish(outcome) }
        }
    }

    /// Asks the handler to cancel a request (reset its stream, or drop it from the queue).
    ///
    /// Safe to call at any time, even before ``submit(_:)``: the handler only acts on requests it has taken from the
    /// inbox, so a cancel that arrives first finds nothing; the sender checks for cancellation again after
    /// submitting.
    package func cancel(_ request: HTTP2PendingRequest) {
        enum Action {
            case none
            case forward(NIOLoopBound<HTTP2ClientHandler>)
            case finish
        }
        let action: Action = self.inbox.withLock { inbox in
            if let handler = inbox.handler { return .forward(handler) }
            guard let index = inbox.items.firstIndex(where: { $0 === request }) else { return .none }
            inbox.items.remove(at: index)
            return .finish
        }
        switch action {
        case .none:
            break
        case .forward(let handler):
            self.eventLoop.execute { handler.value.cancel(request) }
        case .finish:
            self.eventLoop.execute { request.finish(.cancelled) }
        }
    }

    /// Ends a connection that could not be established (or was closed before it became active): everything queued,
    /// and every later request, gets ``HTTP2StreamOutcome/connectFailed(_:)`` with `reason`.
    func connectFailed(_ reason: String) {
        self.eventLoop.execute {
            if let handler = self.inbox.withLock({ $0.handler }) {
                handler.value.fail(reason)
            } else {
                for request in self.closeInbox(with: .connectFailed(reason)) { request.finish(.connectFailed(reason)) }
            }
        }
    }

    // MARK: Called by the handler, on the event loop.

    /// Attaches the handler that owns the connection, when its channel becomes active; it drains what was queued
    /// meanwhile once TLS is up. Returns `false` if another handler is attached already or the inbox is closed
    /// (the caller then owns nothing here and closes its channel).
    func attach(_ handler: HTTP2ClientHandler) -> Bool {
        self.eventLoop.preconditionInEventLoop()
        let bound = NIOLoopBound(handler, eventLoop: self.eventLoop)
        return self.inbox.withLock { inbox in
            guard inbox.handler == nil, inbox.closedOutcome == nil else { return false }
            inbox.handler = bound
            inbox.drainScheduled = true
            return true
        }
    }

    /// Removes a request still waiting in the inbox; returns whether it was there.
    func removeFromInbox(_ request: HTTP2PendingRequest) -> Bool {
        self.inbox.withLock { inbox in
            guard let index = inbox.items.firstIndex(where: { $0 === request }) else { return false }
            inbox.items.remove(at: index)
            return true
        }
    }

    /// Takes everything queued so far; the next submit schedules a new drain.
    func takeInbox() -> [HTTP2PendingRequest] {
        self.inbox.withLock { inbox in
            inbox.drainScheduled = false
            let items = inbox.items
            inbox.items = []
            return items
        }
    }

    /// Closes the inbox: later requests get `outcome` at once. Returns what was still queued.
    func closeInbox(with outcome: HTTP2StreamOutcome) -> [HTTP2PendingRequest] {
        self.retire()
        return self.inbox.withLock { inbox in
            inbox.closedOutcome = outcome
            let items = inbox.items
            inbox.items = []
            return items
        }
    }
}
