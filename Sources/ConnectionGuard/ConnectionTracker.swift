import Locking
public import NIOCore

/// Every open connection of one server, what it is doing, and why connections were closed: enforces
/// ``ConnectionLimits/maximumConnections`` and counts what ``ConnectionDeadlineHandler`` closed.
///
/// Thread-safe: connections live on several event loops.
public final class ConnectionTracker: Sendable {
    /// Why the server closed a connection.
    public enum CloseReason: String, Sendable, Hashable, CaseIterable {
        /// No finished TLS handshake within the handshake timeout.
        case handshakeTimeout = "handshake-timeout"
        /// No complete first request within the request-head timeout.
        case requestHeadTimeout = "request-head-timeout"
        /// No request in progress for the idle timeout.
        case idle
        /// A request not answered within the request timeout.
        case requestTimeout = "request-timeout"
        /// Closed to make room for a new connection at the cap.
        case evicted
        /// Closed because the server shuts down, once nothing was in progress on it.
        case shutdown
    }

    enum Phase: Sendable, Hashable {
        /// Accepted, no complete request yet (TLS handshake, or waiting for the first head).
        case new
        /// At least one request in progress.
        case busy
        /// Served before, nothing in progress.
        case idle
    }

    private struct Entry {
        var channel: any Channel
        var phase: Phase
        /// When the connection entered its phase.
        var since: NIODeadline
        var evicting = false
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var evicting = 0
        var closed: [CloseReason: Int] = [:]
        var accepted = 0
    }

    /// The deadlines and the cap.
    public let limits: ConnectionLimits
    private let state = PThreadMutex(State())

    public init(limits: ConnectionLimits) {
        self.limits = limits
    }

    /// Connections open now.
    public var openConnections: Int { self.state.withLock { $0.entries.count } }

    /// Waits until every connection has closed, or `timeout` has passed (a server shutting down, so that no connection
    /// outlives it).
    ///
    /// - Returns: Whether every connection closed in time.
    @discardableResult
    public func waitUntilClosed(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while self.openConnections > 0 {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Connections accepted since start.
    public var acceptedConnections: Int { self.state.withLock { $0.accepted } }

    /// How many connections the server closed, by reason, since start.
    public var closedConnections: [CloseReason: Int] { self.state.withLock { $0.closed } }

    /// Whether another connection may be accepted now. At the cap, the connection that has waited longest without a
    /// request in progress (a new one before an idle one) is closed to make room, and the answer is false until it
    /// has gone; with every connection busy, the server stops accepting until one closes (new clients wait in the
    /// listen backlog).
    public func admitsAnother() -> Bool {
        let victim: (any Channel)? = self.state.withLock { state in
            guard state.entries.count - state.evicting >= self.limits.maximumConnections else { return nil }
            let candidates = state.entries.filter { !$0.value.evicting && $0.value.phase != .busy }
            guard
                let oldest = candidates.min(by: { a, b in
                    // A connection that never completed a request goes first, then the longest waiting.
                    (a.value.phase == .new ? 0 : 1, a.value.since) < (b.value.phase == .new ? 0 : 1, b.value.since)
                })
            else { return nil }
            state.entries[oldest.key]?.evicting = true
            state.evicting += 1
            state.closed[.evicted, default: 0] += 1
            return oldest.value.channel
        }
        if let victim {
            victim.close(promise: nil)
            return false
        }
        return self.state.withLock { $0.entries.count - $0.evicting < self.limits.maximumConnections }
    }

    /// Records an accepted connection until it closes.
    public func track(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        self.state.withLock {
            $0.entries[id] = Entry(channel: channel, phase: .new, since: .now())
            $0.accepted += 1
        }
        channel.closeFuture.whenComplete { _ in
            self.state.withLock { state in
                if let entry = state.entries.removeValue(forKey: id), entry.evicting { state.evicting -= 1 }
            }
        }
    }

    func enter(_ phase: Phase, _ channel: any Channel) {
        self.state.withLock { state in
            guard state.entries[ObjectIdentifier(channel)]?.phase != phase else { return }
            state.entries[ObjectIdentifier(channel)]?.phase = phase
            state.entries[ObjectIdentifier(channel)]?.since = .now()
        }
    }

    func count(_ reason: CloseReason) {
        self.state.withLock { $0.closed[reason, default: 0] += 1 }
    }
}
