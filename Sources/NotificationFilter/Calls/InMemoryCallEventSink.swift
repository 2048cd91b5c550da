import Locking

/// A sink that keeps events in memory, for tests and for callers that poll.
public final class InMemoryCallEventSink: CallEventSink {
    private let storage = PThreadMutex<[CallEvent]>([])

    /// Creates an empty sink.
    public init() {}

    public func emit(_ event: CallEvent) {
        storage.withLock { $0.append(event) }
    }

    /// The events emitted so far, in order.
    public var events: [CallEvent] { storage.withLock { $0 } }

    /// The events emitted so far as JSON lines (no trailing newlines).
    public var lines: [String] { events.map { $0.jsonLine() } }
}
