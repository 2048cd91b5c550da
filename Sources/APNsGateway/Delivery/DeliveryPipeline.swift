/// Numbers accepted pushes and hands them to the sink one at a time, in `seq` order.
///
/// Streams finish validation concurrently. The actor assigns each record the next `seq` and chains its delivery
/// after the previous one's in one step without a suspension point, so the sink sees (and a spool holds) records in
/// strictly increasing `seq`. A failed delivery leaves a gap in the sequence; later records keep increasing.
actor DeliveryPipeline {
    let sink: any DeliverySink
    private var lastSeq: Int
    private var tail: Task<Void, Never>?

    init(sink: any DeliverySink, lastSeq: Int) {
        self.sink = sink
        self.lastSeq = lastSeq
    }

    /// Delivers the record `make` builds from the next `seq`, after every earlier record.
    ///
    /// - Returns: The record delivered.
    /// - Throws: What the sink threw.
    nonisolated func deliver(_ make: @Sendable (Int) -> DeliveryRecord) async throws -> DeliveryRecord {
        let (record, delivery) = await self.enqueue(make)
        try await delivery.value
        return record
    }

    private func enqueue(
        _ make: @Sendable (Int) -> DeliveryRecord
    ) -> (DeliveryRecord, Task<Void, any Error>) {
        self.lastSeq += 1
        let record = make(self.lastSeq)
        let previous = self.tail
        let sink = self.sink
        let delivery = Task {
            await previous?.value
            try await sink.deliver(record)
        }
        self.tail = Task { _ = try? await delivery.value }
        return (record, delivery)
    }
}
