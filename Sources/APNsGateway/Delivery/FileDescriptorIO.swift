#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX calls the sinks use, each with its return code checked and `EINTR` retried.
enum FileDescriptorIO {
    /// Writes every byte, retrying short writes and `EINTR`; `false` on any other error.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
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
        var buffer = [UInt8](repeating: 0, count: count)
        var total = 0
        while total < count {
            let got = buffer.withUnsafeMutableBytes { raw in
                pread(fd, raw.baseAddress! + total, count - total, off_t(offset + total))
            }
            if got < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if got == 0 { break }
            total += got
        }
        return Array(buffer.prefix(total))
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
