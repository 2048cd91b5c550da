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
}
