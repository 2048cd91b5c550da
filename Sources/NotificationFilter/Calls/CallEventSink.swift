/// Where the call provider sends call events.
///
/// ``emit(_:)`` is synchronous and must return quickly: the provider calls it while it holds its
/// state, so that no other report can slip in between a decision and its event. Sinks that do slow
/// work (running a hook command) start it and return.
public protocol CallEventSink: Sendable {
    /// Records one event. Failures are logged by the sink, never thrown: events must not break calls.
    ///
    /// - Parameter event: The event to record.
    func emit(_ event: CallEvent)

    /// Events emitted from now until the matching ``endBatch()`` may be held and recorded together then (one
    /// commit for a batch of payloads instead of one per event). Batches nest; the outermost end records.
    func beginBatch()

    /// Records the events held since the matching ``beginBatch()``, in the order they were emitted.
    func endBatch()
}

extension CallEventSink {
    /// Records each event as it comes: nothing is held.
    public func beginBatch() {}

    /// Nothing is held.
    public func endBatch() {}
}
