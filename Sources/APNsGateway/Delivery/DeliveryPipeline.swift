import Synchronization

/// Numbers accepted pushes and hands them to the sink one at a time, in `seq` order.
///
/// Streams finish validation concurrently; the pipeline assigns each record the next `seq` and chains its
/// delivery after the previous one's, so the sink sees (and a spool holds) records in strictly increasing `seq`.
/// A failed delivery leaves a gap in the sequence; later records keep increasing.
final class DeliveryPipeline: Sendable {
    private struct State {
        var lastSeq: Int
        var tail: Task<Void, Never>?
    }

    let sink: any DeliverySink
    private let state: Mutex<State>

    init(sink: any DeliverySink, lastSeq: Int) {
        self.sink = sink
        self.state = Mutex(State(lastSeq: lastSeq, tail: nil))
    }

    /// Delivers the record `make` builds from the next `seq`, after every earlier record.
    ///
    /// - Returns: The record delivered.
    /// - Throws: What the sink threw.
    func deliver(_ make: (Int) -> DeliveryRecord) async throws -> DeliveryRecord {
        let (record, delivery) = self.state.withLock { state in
            state.lastSeq += 1
            let record = make(state.lastSeq)
            let previous = state.tail
            let sink = self.sink
            let delivery = Task {
                await previous?.value
                try await sink.deliver(record)
            }
            state.tail = Task { _ = try? await delivery.value }
            return (record, delivery)
        }
        try await delivery.value
        return record
    }
}
