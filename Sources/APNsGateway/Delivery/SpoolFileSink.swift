import Dispatch
import Foundation
import Locking

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A durable sink: each record is appended to a file as one JSON line and `fsync`'d before the gateway answers
/// `200`, so an acknowledged push survives a crash.
///
/// Opening an existing spool continues its sequence after the last complete line. A torn last line (a crash in
/// the middle of a write, which was never acknowledged) is cut off at open. Writes run one at a time on a private
/// queue, off the Swift concurrency pool, because `fsync` blocks. The file is created with mode 0600.
public final class SpoolFileSink: DeliverySink {
    private struct State {
        var fd: Int32
        var lastSeq: Int
    }

    /// The spool file's path.
    public let path: String
    private let state: PThreadMutex<State>
    private let queue = DispatchQueue(label: "APNsGateway.SpoolFileSink")

    /// Opens (or creates) a spool file for appending.
    ///
    /// - Parameter path: The spool file; its directory must exist.
    /// - Throws: ``GatewayError/Code/spoolIOFailed`` when the file cannot be opened, or its last line is not a
    ///   delivery record (the file is not a gateway spool).
    public init(path: String) throws(GatewayError) {
        self.path = path
        let existed = FileManager.default.fileExists(atPath: path)
        let fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .spoolIOFailed(
                "cannot open the spool \(path): \(FileDescriptorIO.lastError()); check the directory exists and is writable"
            )
        }
        let lastSeq: Int
        do {
            lastSeq = try Self.recoverLastSequence(fd: fd, path: path)
        } catch {
            _ = FileDescriptorIO.close(fd)
            throw error
        }
        if !existed { Self.syncDirectory(of: path) }
        self.state = PThreadMutex(State(fd: fd, lastSeq: lastSeq))
    }

    deinit {
        self.state.withLock { state in
            if state.fd >= 0 { _ = FileDescriptorIO.close(state.fd) }
        }
    }

    /// Appends the record's JSON line and `fsync`s the file.
    ///
    /// - Parameter record: The accepted push.
    /// - Throws: ``GatewayError/Code/spoolIOFailed`` when writing or syncing fails; a partly written line is
    ///   cut off again, so the spool never holds a torn record.
    public func deliver(_ record: DeliveryRecord) async throws {
        let line = Array((record.jsonLine() + "\n").utf8)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            self.queue.async {
                continuation.resume(with: Result { try self.append(line, seq: record.seq) })
            }
        }
    }

    /// The `seq` of the last record in the file.
    ///
    /// - Returns: The last `seq`, or `0` for an empty spool.
    public func lastSequence() async throws -> Int {
        self.state.withLock { $0.lastSeq }
    }

    /// Closes the file; later deliveries fail.
    public func close() {
        self.state.withLock { state in
            if state.fd >= 0 { _ = FileDescriptorIO.close(state.fd) }
            state.fd = -1
        }
    }

    private func append(_ line: [UInt8], seq: Int) throws(GatewayError) {
        try self.state.withLock { (state: inout State) throws(GatewayError) in
            guard state.fd >= 0 else { throw .spoolIOFailed("the spool \(self.path) is closed") }
            let sizeBefore = FileDescriptorIO.size(state.fd)
            guard FileDescriptorIO.writeAll(state.fd, line), FileDescriptorIO.sync(state.fd) else {
                let reason = FileDescriptorIO.lastError()
                if let sizeBefore { _ = ftruncate(state.fd, off_t(sizeBefore)) }
                throw .spoolIOFailed("cannot append to the spool \(self.path): \(reason); check free space")
            }
            state.lastSeq = max(state.lastSeq, seq)
        }
    }

    /// Finds the last complete line's `seq`, cutting off a torn tail.
    private static func recoverLastSequence(fd: Int32, path: String) throws(GatewayError) -> Int {
        guard var size = FileDescriptorIO.size(fd) else {
            throw .spoolIOFailed("cannot stat the spool \(path): \(FileDescriptorIO.lastError())")
        }
        var chunk = 64 * 1024
        while size > 0 {
            let start = max(0, size - chunk)
            guard let tail = FileDescriptorIO.read(fd, offset: start, count: size - start) else {
                throw .spoolIOFailed("cannot read the spool \(path): \(FileDescriptorIO.lastError())")
            }
            let newline = UInt8(ascii: "\n")
            if tail.last != newline {
                // A torn last line: cut it off (it was never acknowledged).
                let cut = tail.lastIndex(of: newline).map { start + $0 + 1 } ?? (start == 0 ? 0 : nil)
                guard let cut else {
                    chunk *= 2
                    continue
                }
                guard ftruncate(fd, off_t(cut)) == 0, FileDescriptorIO.sync(fd) else {
                    throw .spoolIOFailed("cannot repair the spool \(path): \(FileDescriptorIO.lastError())")
                }
                size = cut
                continue
            }
            let body = tail.dropLast()
            let lineStart = body.lastIndex(of: newline).map { $0 + 1 }
            if lineStart == nil && start > 0 {
                chunk *= 2
                continue
            }
            let line = body[(lineStart ?? body.startIndex)...]
            guard let record = try? JSONDecoder().decode(SequenceOnly.self, from: Data(line)) else {
                throw .spoolIOFailed(
                    "the last line of \(path) is not a delivery record: give a new file or a gateway spool"
                )
            }
            return record.seq
        }
        return 0
    }

    private static func syncDirectory(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = FileDescriptorIO.sync(fd)
        _ = FileDescriptorIO.close(fd)
    }

    private struct SequenceOnly: Decodable {
        var seq: Int
    }
}
