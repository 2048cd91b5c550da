import SystemPackage

/// Reads and writes files that hold secrets: written with mode 0600 (atomically, through a temporary file and
/// `rename`), refused on read when group or others may read or write them.
///
/// The I/O is swift-system's `FileDescriptor` (EINTR retried there); the calls it does not wrap are in
/// `Platform.swift`, so this builds wherever the package does (Linux, Darwin).
public enum SecretFile: Sendable {
    /// Reads a secret file into ``SecureBytes``.
    ///
    /// - Throws: `.insecureFile` when the file's mode allows group or other access (the message says to
    ///   `chmod 600`); `.keyFile` when it cannot be read.
    public static func read(path: String) throws(E2EEError) -> SecureBytes {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec])
        } catch {
            throw E2EEError(.keyFile, "cannot read \(path): \(Self.reason(error)); check the path")
        }
        defer { try? fd.close() }
        let info: Stat
        do {
            info = try fd.stat()
        } catch {
            throw E2EEError(.keyFile, "cannot stat \(path)")
        }
        guard info.type == .regular else { throw E2EEError(.keyFile, "\(path) is not a regular file") }
        try checkPrivatePermissions(info.permissions, path: path)
        let size = Int(info.size)
        guard size <= 1 << 20 else { throw E2EEError(.keyFile, "\(path) is too large to be a key file") }
        return try SecureBytes(count: size) { (buffer: UnsafeMutableRawBufferPointer) throws(E2EEError) in
            var offset = 0
            while offset < size {
                let n = try? fd.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]))
                guard let n, n > 0 else { throw E2EEError(.keyFile, "short read from \(path)") }
                offset += n
            }
        }
    }

    /// The first bytes of a file (at most `count`), read without the private-mode check of ``read(path:)``: for
    /// telling a file that is not a secret at all (a public card passed where an identity belongs) from a secret
    /// whose mode is wrong. Nil when the file cannot be opened.
    public static func prefix(path: String, count: Int) -> [UInt8]? {
        guard let fd = try? FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec]) else { return nil }
        defer { try? fd.close() }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = bytes.withUnsafeMutableBytes { buffer in
                try? fd.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
            }
            guard let n, n > 0 else { break }
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
        guard let info = try? Stat(FilePath(path)) else { return false }
        try checkPrivatePermissions(info.permissions, path: path, contents: contents)
        return true
    }

    /// The one rule for secret files: no permission bit for group or others.
    static func checkPrivatePermissions(
        _ permissions: FilePermissions,
        path: String,
        contents: String = "secrets"
    ) throws(E2EEError) {
        guard permissions.rawValue & 0o077 == 0 else {
            throw E2EEError(
                .insecureFile,
                "\(path) holds \(contents) but is readable or writable by others (mode \(String(permissions.rawValue & 0o777, radix: 8))): run chmod 600 \(path)"
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
            try write(path: path, raw: b, permissions: FilePermissions(rawValue: .init(mode)))
        }
    }

    static func write(
        path: String,
        raw: UnsafeRawBufferPointer,
        permissions: FilePermissions = [.ownerRead, .ownerWrite]
    ) throws(E2EEError) {
        let temporary = path + ".tmp-\(Platform.processID)"
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(
                FilePath(temporary),
                .writeOnly,
                options: [.create, .truncate, .closeOnExec, .noFollow],
                permissions: permissions
            )
        } catch {
            throw E2EEError(.keyFile, "cannot create \(temporary): \(Self.reason(error))")
        }
        do throws(Errno) {
            do throws(Errno) {
                try Platform.setPermissions(fd, permissions)
                do {
                    _ = try fd.writeAll(raw)
                } catch let error as Errno {
                    throw error
                } catch {
                    throw Errno.ioError
                }
                try Platform.sync(fd)
            } catch {
                try? fd.close()
                throw error
            }
            try? fd.close()
            try Platform.move(temporary, over: path)
        } catch {
            Platform.removeQuietly(temporary)
            throw E2EEError(.keyFile, "cannot write \(path): \(error)")
        }
    }

    /// What an errno says, for a message (no Swift type names).
    private static func reason(_ error: any Error) -> String {
        (error as? Errno).map { "\($0)" } ?? "\(error)"
    }
}
