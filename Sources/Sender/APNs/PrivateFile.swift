import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading and writing files that hold secrets or private state: owner-only permissions, checked on the open file.
///
/// The permission check runs `fstat` on the descriptor that is then read, so the file checked is the file read
/// (no check-then-open race). Writes go to a `0600` temporary file in the same folder, are synced, then renamed
/// over the target, so a reader sees the old or the new file, never half of one.
enum PrivateFile {
    /// What went wrong, for the caller to map onto its own error.
    enum Failure: Error {
        case unreadable(String)
        case tooOpen(mode: UInt32)
        case unwritable(String)
    }

    /// Reads a whole regular file after checking it is not readable or writable by group or others.
    ///
    /// - Parameter path: The file to read (symbolic links are followed; the target is checked).
    /// - Returns: The file's bytes.
    /// - Throws: ``Failure/unreadable(_:)`` or ``Failure/tooOpen(mode:)``.
    static func readOwnerOnly(path: String) throws(Failure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(Self.errnoText()) }
        defer { _ = close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .unreadable(Self.errnoText()) }
        guard (UInt32(info.st_mode) & UInt32(S_IFMT)) == UInt32(S_IFREG) else {
            throw .unreadable("not a regular file")
        }
        let mode = UInt32(info.st_mode) & 0o777
        guard mode & 0o077 == 0 else { throw .tooOpen(mode: mode) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(Self.errnoText())
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            guard bytes.count <= 1 << 20 else { throw .unreadable("file larger than 1 MiB") }
        }
        return bytes
    }

    /// Atomically replaces `path` with `bytes`, the new file created with mode `0600`.
    ///
    /// - Parameters:
    ///   - bytes: The new contents.
    ///   - path: The target file; its folder must exist.
    /// - Throws: ``Failure/unwritable(_:)``.
    static func writeOwnerOnly(_ bytes: [UInt8], to path: String) throws(Failure) {
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: .min ... .max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .unwritable(Self.errnoText()) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                write(fd, buffer.baseAddress! + written, buffer.count - written)
            }
            if count < 0 {
                if errno == EINTR { continue }
                let text = Self.errnoText()
                _ = close(fd)
                _ = unlink(temporary)
                throw .unwritable(text)
            }
            written += count
        }
        guard fsync(fd) == 0 else {
            let text = Self.errnoText()
            _ = close(fd)
            _ = unlink(temporary)
            throw .unwritable(text)
        }
        _ = close(fd)
        guard rename(temporary, path) == 0 else {
            let text = Self.errnoText()
            _ = unlink(temporary)
            throw .unwritable(text)
        }
    }

    /// Whether a file exists at `path` (any type).
    static func exists(path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    private static func errnoText() -> String {
        String(cString: strerror(errno))
    }
}
