import SystemPackage

// The gateway's one file that names the C library: the POSIX calls swift-system does not wrap (fsync, fstat, a
// socket send with flags), each with its return code checked and EINTR retried. Whole-buffer reads and writes go
// through swift-system's `FileDescriptor`, as in the rest of the project, which retries EINTR and short writes.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file calls the sinks and the provider-key writer use. Each reports failure as `false` or `nil` and leaves
/// the reason in `errno`, for ``lastError()``.
enum FileDescriptorIO {
    /// Writes every byte (swift-system's `writeAll`); `false` on error.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        do {
            _ = try FileDescriptor(rawValue: fd).writeAll(bytes)
            return true
        } catch {
            Self.keep(error)
            return false
        }
    }

    /// `fsync`, retrying `EINTR`; `false` on error.
    static func sync(_ fd: Int32) -> Bool {
        while fsync(fd) != 0 {
            if errno != EINTR { return false }
        }
        return true
    }

    /// Reads `count` bytes at `offset` (fewer at end of file); `nil` on error.
    static func read(_ fd: Int32, offset: Int, count: Int) -> [UInt8]? {
        let file = FileDescriptor(rawValue: fd)
        var buffer = [UInt8](repeating: 0, count: count)
        var total = 0
        do {
            // A read may return fewer bytes than asked before the end of the file: read on until it returns none.
            while total < count {
                let got = try buffer.withUnsafeMutableBytes { raw in
                    try file.read(
                        fromAbsoluteOffset: Int64(offset + total),
                        into: UnsafeMutableRawBufferPointer(rebasing: raw[total...])
                    )
                }
                if got == 0 { break }
                total += got
            }
        } catch {
            Self.keep(error)
            return nil
        }
        return Array(buffer.prefix(total))
    }

    /// Leaves a swift-system error's code in `errno`, where ``lastError()`` reads it.
    private static func keep(_ error: any Error) {
        errno = (error as? Errno)?.rawValue ?? EIO
    }

    /// The file's size; `nil` on error.
    static func size(_ fd: Int32) -> Int? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return Int(info.st_size)
    }

    /// Closes a descriptor.
    @discardableResult
    static func close(_ fd: Int32) -> Bool {
        #if canImport(Glibc)
        Glibc.close(fd) == 0
        #else
        Darwin.close(fd) == 0
        #endif
    }

    /// The text of `errno`.
    static func lastError() -> String {
        String(cString: strerror(errno))
    }
}
