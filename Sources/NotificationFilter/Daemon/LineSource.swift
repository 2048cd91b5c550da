import Dispatch
import Locking
import SystemPackage

/// Reads newline-terminated lines from a file descriptor (stdin, or a spool file that keeps growing), without
/// Foundation and without blocking the cooperative thread pool: each `read(2)` (swift-system's, which retries on
/// EINTR) runs on a dispatch queue.
///
/// Lines longer than `maximumLineLength` are cut there and returned whole-line-marked as oversized; a partial last
/// line stays buffered until its newline arrives (a spool writer appends whole lines).
final class LineSource: Sendable {
    struct Line: Sendable {
        /// The line without its newline (truncated to the maximum length when oversized).
        var bytes: [UInt8]
        /// The byte offset just after this line's newline, from the start of the file.
        var endOffset: Int64
        var oversized: Bool
    }

    private let fd: FileDescriptor
    private let follow: Bool
    private let queue = DispatchQueue(label: "e2ee-filter.read")
    private let state: PThreadMutex<State>
    let maximumLineLength: Int

    private struct State: ~Copyable {
        var buffer: [UInt8] = []
        var bufferStartOffset: Int64
        var skippingOversized = false
        var eof = false
    }

    /// - Parameters:
    ///   - fd: the descriptor, positioned at `startOffset`.
    ///   - follow: at end of file, wait for more (a spool) instead of finishing (stdin, or `--exit-at-end`).
    init(fd: Int32, startOffset: Int64, follow: Bool, maximumLineLength: Int) {
        self.fd = FileDescriptor(rawValue: fd)
        self.follow = follow
        self.maximumLineLength = maximumLineLength
        self.state = PThreadMutex(State(bufferStartOffset: startOffset))
    }

    /// Up to `limit` complete lines that are available now, waiting for at least one; nil at the end of input.
    /// Returns an empty array if cancelled while waiting.
    func nextLines(limit: Int) async -> [Line]? {
        while true {
            if Task.isCancelled { return [] }
            let (lines, eof) = self.takeLines(limit: limit)
            if !lines.isEmpty { return lines }
            if eof { return nil }
            let got = await self.readChunk()
            if got == 0 {
                if self.follow {
                    try? await Task.sleep(for: .milliseconds(20))
                } else {
                    self.state.withLock { $0.eof = true }
                }
            }
        }
    }

    /// The index of the first newline of `buffer` at or after `index` (`memchr`, ``Platform/firstNewline(in:from:)``:
    /// docs/BENCHMARKS.md has what a byte-by-byte search cost).
    private static func newline(in buffer: [UInt8], from index: Int) -> Int? {
        Platform.firstNewline(in: buffer, from: index)
    }

    private func takeLines(limit: Int) -> ([Line], Bool) {
        self.state.withLock { state in
            var lines: [Line] = []
            var start = 0
            var index = 0
            let buffer = state.buffer
            while lines.count < limit, let newline = Self.newline(in: buffer, from: index) {
                let end = state.bufferStartOffset + Int64(newline + 1)
                if state.skippingOversized {
                    state.skippingOversized = false
                    lines.append(
                        Line(
                            bytes: Array(buffer[start..<min(newline, start + maximumLineLength)]),
                            endOffset: end,
                            oversized: true
                        )
                    )
                } else {
                    let length = newline - start
                    lines.append(
                        Line(
                            bytes: Array(buffer[start..<min(newline, start + maximumLineLength)]),
                            endOffset: end,
                            oversized: length > maximumLineLength
                        )
                    )
                }
                start = newline + 1
                index = start
            }
            if start > 0 {
                state.buffer.removeFirst(start)
                state.bufferStartOffset += Int64(start)
            }
            // A line without a newline that outgrew the limit: keep only a prefix, remember to skip to its end.
            // (Only when every complete line was taken: a batch that reached `limit` can leave complete lines behind,
            // more than twice the limit of them once a read is larger than the limit.)
            if lines.count < limit, state.buffer.count > maximumLineLength * 2 {
                let drop = state.buffer.count - maximumLineLength
                state.buffer.removeLast(drop)
                state.skippingOversized = true
                // The offset of bytes dropped from the middle is not needed: only endOffset of lines matters,
                // which is computed from bufferStartOffset plus positions; account for the dropped bytes.
                state.bufferStartOffset += Int64(drop)
            }
            if state.eof && !state.buffer.isEmpty && lines.count < limit {
                // The input ended without a final newline: that is still a line.
                let end = state.bufferStartOffset + Int64(state.buffer.count)
                lines.append(
                    Line(
                        bytes: Array(state.buffer.prefix(maximumLineLength)),
                        endOffset: end,
                        oversized: state.skippingOversized || state.buffer.count > maximumLineLength
                    )
                )
                state.buffer.removeAll()
                state.bufferStartOffset = end
            }
            return (lines, state.eof && state.buffer.isEmpty)
        }
    }

    private func readChunk() async -> Int {
        let chunk: [UInt8] = await withCheckedContinuation { continuation in
            self.queue.async {
                var bytes = [UInt8](repeating: 0, count: 64 * 1024)
                let n = bytes.withUnsafeMutableBytes { (try? self.fd.read(into: $0)) ?? 0 }
                continuation.resume(returning: n > 0 ? Array(bytes[0..<n]) : [])
            }
        }
        if !chunk.isEmpty { self.state.withLock { $0.buffer += chunk } }
        return chunk.count
    }
}
