#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads and writes files that hold secrets: written with mode 0600 (atomically, through a temporary file and
/// `rename`), refused on read when group or others may read or write them.
public enum SecretFile: Sendable {
    /// Reads a secret file into ``SecureBytes``.
    ///
    /// - Throws: `.insecureFile` when the file's mode allows group or other access (the message says to
    ///   `chmod 600`); `.keyFile` when it cannot be read.
    public static func read(path: String) throws(E2EEError) -> SecureBytes {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw E2EEError(.keyFile, "cannot read \(path): \(String(cString: strerror(errno))); check the path")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw E2EEError(.keyFile, "cannot stat \(path)") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw E2EEError(.keyFile, "\(path) is not a regular file") }
        guard info.st_mode & 0o077 == 0 else {
            throw E2EEError(
                .insecureFile,
                "\(path) holds secrets but is readable or writable by others (mode \(String(info.st_mode & 0o777, radix: 8))): run chmod 600 \(path)"
            )
        }
        let size = Int(info.st_size)
        guard size <= 1 << 20 else { throw E2EEError(.keyFile, "\(path) is too large to be a key file") }
        return try SecureBytes(count: size) { (buffer: UnsafeMutableRawBufferPointer) throws(E2EEError) in
            var offset = 0
            while offset < size {
                let n = Glibc.read(fd, buffer.baseAddress!.advanced(by: offset), size - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw E2EEError(.keyFile, "short read from \(path)") }
                offset += n
            }
        }
    }

    /// Reads a passphrase file (same rules as ``read(path:)``), without one trailing newline (as `echo secret >
    /// file` writes one).
    public static func readPassphrase(path: String) throws(E2EEError) -> SecureBytes {
        let raw = try read(path: path)
        return raw.withUnsafeBytes { bytes in
            SecureBytes(copying: bytes.prefix(bytes.last == 0x0A ? bytes.count - 1 : bytes.count))
        }
    }

    /// Writes `bytes` to `path` with mode 0600: a temporary file in the same folder, fsync, rename.
    ///
    /// - Throws: `.keyFile` when the file cannot be written.
    public static func write(path: String, bytes: SecureBytes) throws(E2EEError) {
        try bytes.withUnsafeBytes { (b: UnsafeRawBufferPointer) throws(E2EEError) in try write(path: path, raw: b) }
    }

    /// Writes public bytes atomically with the given mode (0644 for a card).
    public static func writePublic(path: String, bytes: [UInt8], mode: UInt32 = 0o644) throws(E2EEError) {
        try bytes.withBytes { (b: UnsafeRawBufferPointer) throws(E2EEError) in
            try write(path: path, raw: b, mode: mode_t(mode))
        }
    }

    static func write(path: String, raw: UnsafeRawBufferPointer, mode: mode_t = 0o600) throws(E2EEError) {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else {
            throw E2EEError(.keyFile, "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        var ok = fchmod(fd, mode) == 0
        var offset = 0
        while ok && offset < raw.count {
            let n = Glibc.write(fd, raw.baseAddress!.advanced(by: offset), raw.count - offset)
            if n < 0 && errno == EINTR { continue }
            ok = n > 0
            if ok { offset += n }
        }
        ok = ok && fsync(fd) == 0
        close(fd)
        guard ok, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw E2EEError(.keyFile, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}
