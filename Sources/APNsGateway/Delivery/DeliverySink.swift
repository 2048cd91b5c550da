/// Where accepted pushes go: the gateway answers `200` only after ``deliver(_:)`` returns.
///
/// The gateway calls ``deliver(_:)`` one record at a time, in `seq` order, so a sink needs no ordering of its
/// own. A sink that throws makes the gateway answer `500 InternalServerError`, and the client retries.
public protocol DeliverySink: Sendable {
    /// Stores one accepted push; return only once it is as safe as the sink promises (for a spool: on disk).
    ///
    /// - Parameter record: The push, with its `seq` assigned.
    /// - Throws: Any error when the record could not be stored; the push is then answered with a 500.
    func deliver(_ record: DeliveryRecord) async throws

    /// The highest `seq` already stored, so a restarted gateway continues after it; `0` when empty.
    ///
    /// - Returns: The last stored sequence number.
    /// - Throws: Any error when the sink cannot tell.
    func lastSequence() async throws -> Int
}

extension DeliverySink {
    /// A sink without memory starts every run at `seq` 1.
    public func lastSequence() async throws -> Int { 0 }
}
