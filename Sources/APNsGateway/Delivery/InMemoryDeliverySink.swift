import Locking

/// A sink that keeps records in memory, for tests.
public final class InMemoryDeliverySink: DeliverySink {
    private let storage = PThreadMutex<[DeliveryRecord]>([])

    /// Creates an empty sink.
    public init() {}

    /// Every record delivered so far, in order.
    public var records: [DeliveryRecord] { self.storage.withLock { $0 } }

    /// Appends the record.
    ///
    /// - Parameter record: The accepted push.
    public func deliver(_ record: DeliveryRecord) async throws {
        self.storage.withLock { $0.append(record) }
    }

    /// The `seq` of the last record, so a server restarted on the same sink continues.
    ///
    /// - Returns: The last `seq`, or `0`.
    public func lastSequence() async throws -> Int {
        self.storage.withLock { $0.last?.seq ?? 0 }
    }
}
