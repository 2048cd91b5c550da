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
        try checkPrivateMode(info.st_mode, path: path)
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

    /// The first bytes of a file (at most `count`), read without the private-mode check of ``read(path:)``: for
    /// telling a file that is not a secret at all (a public card passed where an identity belongs) from a secret
    /// whose mode is wrong. Nil when the file cannot be opened.
    public static func prefix(path: String, count: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = bytes.withUnsafeMutableBytes { buffer in
                Glibc.read(fd, buffer.baseAddress!.advanced(by: filled), count - filled)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            filled += n
        }
        return Array(bytes.prefix(filled))
    }

    /// Checks that an existing file is private to its owner, as ``read(path:)`` requires of a secret file.
    ///
    /// - Parameters:
    ///   - path: The file to check.
    ///   - contents: What the file holds, for the message ("secrets", "call metadata").
    /// - Returns: false when there is no file at `path`, true when there is one and it is private.
    /// - Throws: `.insecureFile` when group or others may read or write it (the message says to `chmod 600`).
    public static func checkPrivate(path: String, contents: String = "secrets") throws(E2EEError) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        try checkPrivateMode(info.st_mode, path: path, contents: contents)
        return true
    }

    /// The one rule for secret files: no permission bit for group or others.
    static func checkPrivateMode(_ mode: mode_t, path: String, contents: String = "secrets") throws(E2EEError) {
        guard mode & 0o077 == 0 else {
            throw E2EEError(
                .insecureFile,
                "\(path) holds \(contents) but is readable or writable by others (mode \(String(mode & 0o777, radix: 8))): run chmod 600 \(path)"
            )
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
