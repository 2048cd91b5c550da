import SystemPackage

// The one file of E2EECore that names the C library: the few POSIX calls swift-system does not wrap. They have the
// same names and meaning on Linux (Glibc, Musl) and Darwin; everything else goes through swift-system's
// `FileDescriptor`, which retries on EINTR.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

enum Platform {
    /// `fsync(2)`: the file's bytes are on disk when it returns without error.
    static func sync(_ fd: FileDescriptor) throws(Errno) {
        guard fsync(fd.rawValue) == 0 else { throw Errno(rawValue: errno) }
    }

    /// `fchmod(2)`: sets the permission bits whatever the umask took away.
    static func setPermissions(_ fd: FileDescriptor, _ permissions: FilePermissions) throws(Errno) {
        guard fchmod(fd.rawValue, permissions.rawValue) == 0 else { throw Errno(rawValue: errno) }
    }

    /// `rename(2)`: atomically replaces `path` with `temporary`.
    static func move(_ temporary: String, over path: String) throws(Errno) {
        guard rename(temporary, path) == 0 else { throw Errno(rawValue: errno) }
    }

    /// `unlink(2)`, ignoring failure (cleanup of a temporary file).
    static func removeQuietly(_ path: String) {
        _ = unlink(path)
    }

    /// The process id, to name temporary files.
    static var processID: Int32 { Int32(getpid()) }
}
