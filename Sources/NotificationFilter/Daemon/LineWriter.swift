import SystemPackage

/// Appends JSON lines to a file descriptor (stdout, or a file opened for append), whole lines per `write(2)`.
///
/// Its I/O is swift-system's `FileDescriptor` (EINTR retried there), the same on Linux and Darwin.
///
/// For a file, ``open(path:)`` first cuts a partial last line left by a killed process, so the file always holds
/// whole lines; ``lastLine()`` and ``lineCount()`` let the daemon re-emit what a crash lost.
final class LineWriter: @unchecked Sendable {
    // @unchecked Sendable: `fd` is immutable; writes are serialised by the daemon (one writer task), and write(2)
    // on an O_APPEND descriptor is atomic per call for our line sizes.
    let fd: FileDescriptor
    let path: String?

    static let standardOutput = LineWriter(fd: .standardOutput, path: nil)

    private init(fd: FileDescriptor, path: String?) {
        self.fd = fd
        self.path = path
    }

    /// Opens (creating, mode 0600: decisions carry decrypted text) a file for appending, after cutting a partial
    /// last line.
    static func open(path: String) throws(FilterError) -> LineWriter {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(
                FilePath(path),
                .readWrite,
                options: [.create, .append, .closeOnExec],
                permissions: [.ownerRead, .ownerWrite]
            )
        } catch {
            throw FilterError("cannot open \(path) for writing: \(error)")
        }
        let writer = LineWriter(fd: fd, path: path)
        let size = (try? fd.seek(offset: 0, from: .end)) ?? 0
        if size > 0 {
            let tail = writer.readTail(maxBytes: 128 * 1024)
            if tail.last != 0x0A {
                let tailStart = Int(size) - tail.count
                var keep = 0
                if let newline = tail.lastIndex(of: 0x0A) {
                    keep = tailStart + newline + 1
                } else if tailStart > 0 {
                    keep = Int(size)  // no newline in the last 128 KiB: leave the file alone
                }
                try? fd.resize(to: Int64(keep))
            }
        }
        return writer
    }

    private func readTail(maxBytes: Int) -> [UInt8] {
        let size = (try? self.fd.seek(offset: 0, from: .end)) ?? 0
        let start = max(0, Int(size) - maxBytes)
        var bytes = [UInt8](repeating: 0, count: Int(size) - start)
        let n = bytes.withUnsafeMutableBytes { (try? self.fd.read(fromAbsoluteOffset: Int64(start), into: $0)) ?? 0 }
        return n > 0 ? Array(bytes[0..<n]) : []
    }

    /// The last whole line of the file (nil for stdout or an empty file).
    func lastLine() -> [UInt8]? {
        guard self.path != nil else { return nil }
        let tail = self.readTail(maxBytes: 128 * 1024)
        guard tail.last == 0x0A else { return nil }
        let body = tail.dropLast()
        let start = body.lastIndex(of: 0x0A).map { $0 + 1 } ?? body.startIndex
        return Array(body[start...])
    }

    /// The number of whole lines in the file (0 for stdout).
    func lineCount() -> Int {
        guard self.path != nil else { return 0 }
        var count = 0
        var offset: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { (try? self.fd.read(fromAbsoluteOffset: offset, into: $0)) ?? 0 }
            if n <= 0 { break }
            for i in 0..<n where buffer[i] == 0x0A { count += 1 }
            offset += Int64(n)
        }
        return count
    }

    /// Writes lines, each followed by a newline, in as few `write(2)` calls as possible.
    func write(_ lines: [String]) throws(FilterError) {
        guard !lines.isEmpty else { return }
        var bytes: [UInt8] = []
        for line in lines {
            bytes += line.utf8
            bytes.append(0x0A)
        }
        do {
            _ = try self.fd.writeAll(bytes)
        } catch {
            throw FilterError("cannot write output: \(error)")
        }
    }

    deinit {
        if self.path != nil { try? self.fd.close() }
    }
}
