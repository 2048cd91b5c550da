import Locking

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A sink that prints each record as one JSON line on standard output (and flushes it before the 200).
public final class StdoutSink: DeliverySink {
    private let lock = PThreadMutex(())

    /// Creates the sink.
    public init() {}

    /// Writes the record's JSON line and a newline to standard output.
    ///
    /// - Parameter record: The accepted push.
    /// - Throws: ``GatewayError/Code/deliveryFailed`` when standard output is closed.
    public func deliver(_ record: DeliveryRecord) async throws {
        let line = Array((record.jsonLine() + "\n").utf8)
        try self.lock.withLock { _ in
            guard FileDescriptorIO.writeAll(STDOUT_FILENO, line) else {
                throw GatewayError(
                    code: .deliveryFailed,
                    message: "cannot write to standard output: is the reading end of the pipe closed?"
                )
            }
        }
    }
}
