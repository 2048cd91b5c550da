import Locking
import NIOCore

/// Numbers accepted pushes and hands them to the sink one at a time, in `seq` order.
///
/// Streams finish validation concurrently on the event loops. ``deliver(_:promise:)`` assigns the next `seq` and
/// queues the record in one step under a lock, so the sink sees (and a spool holds) records in strictly increasing
/// `seq`. One drain task at a time takes records off the queue and awaits the sink for each; it runs while the
/// queue is not empty and ends when it is, so a burst of pushes costs one task, not one per push. Each record's
/// promise is completed once the sink has it (or has failed it). A failed delivery leaves a gap in the sequence;
/// later records keep increasing.
final class DeliveryPipeline: Sendable {
    private struct State {
        var lastSeq: Int
        var queue = CircularBuffer<(DeliveryRecord, EventLoopPromise<DeliveryRecord>)>()
        var draining = false
    }

    let sink: any DeliverySink
    private let state: PThreadMutex<State>

    init(sink: any DeliverySink, lastSeq: Int) {
        self.sink = sink
        self.state = PThreadMutex(State(lastSeq: lastSeq))
    }

    /// Gives `record` the next `seq` and queues it after every earlier record; `promise` gets the numbered record
    /// once the sink has stored it, or the sink's error.
    func deliver(_ record: DeliveryRecord, promise: EventLoopPromise<DeliveryRecord>) {
        var record = record
        let startDrain = self.state.withLock { state in
            state.lastSeq += 1
            record.seq = state.lastSeq
            state.queue.append((record, promise))
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
        if startDrain {
            Task { await self.drain() }
        }
    }

    private func drain() async {
        while let (record, promise) = self.next() {
            do {
                try await self.sink.deliver(record)
                promise.succeed(record)
            } catch {
                promise.fail(error)
            }
        }
    }

    /// The oldest queued record, or `nil` (and the drain ends) when the queue is empty.
    private func next() -> (DeliveryRecord, EventLoopPromise<DeliveryRecord>)? {
        self.state.withLock { state in
            guard let first = state.queue.popFirst() else {
                state.draining = false
                return nil
            }
            return first
        }
    }
}
