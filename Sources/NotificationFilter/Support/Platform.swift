import SystemPackage

// The one file of NotificationFilter that names the C library: the few calls swift-system does not wrap (fchmod,
// memchr, and starting, feeding and reaping a call hook's process). They have the same names and meaning on Linux
// (Glibc, Musl) and Darwin; everything else goes through swift-system's `FileDescriptor` and `Stat`.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

enum Platform {
    /// `fchmod(2)`: sets the permission bits whatever the umask took away; false when it fails.
    static func setPermissions(_ fd: FileDescriptor, _ permissions: FilePermissions) -> Bool {
        fchmod(fd.rawValue, permissions.rawValue) == 0
    }

    /// The index of the first newline of `buffer` at or after `index` (`memchr`).
    static func firstNewline(in buffer: [UInt8], from index: Int) -> Int? {
        buffer.withUnsafeBufferPointer { bytes in
            guard index < bytes.count, let base = bytes.baseAddress,
                let found = memchr(base + index, 0x0A, bytes.count - index)
            else { return nil }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
    }

    // MARK: a call hook's process

    /// Why a hook could not be started.
    enum SpawnFailure: Error {
        case socketPair(errno: Int32)
        case spawn(errno: Int32)
    }

    /// A started hook: its process id, and 0 or the errno that stopped writing its standard input.
    struct Spawned {
        var pid: Int32
        var sendFailure: Int32
    }

    /// Starts `arguments` (the program found on `PATH`) with `standardInput` on its stdin and its stdout on
    /// `/dev/null` (stderr is inherited).
    ///
    /// Its stdin is one end of a Unix socket pair, written without blocking and without SIGPIPE, so a command that
    /// exits without reading cannot raise SIGPIPE in the daemon.
    static func spawn(_ arguments: [String], standardInput: [UInt8]) -> Result<Spawned, SpawnFailure> {
        var sockets: [Int32] = [-1, -1]
        #if canImport(Darwin)
        let socketType = SOCK_STREAM
        #else
        let socketType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #endif
        guard socketpair(AF_UNIX, socketType, 0, &sockets) == 0 else { return .failure(.socketPair(errno: errno)) }
        #if canImport(Darwin)
        _ = fcntl(sockets[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(sockets[1], F_SETFD, FD_CLOEXEC)
        var noSigPipe: Int32 = 1
        _ = setsockopt(sockets[0], SOL_SOCKET, SO_NOSIGPIPE, &noSigPipe, socklen_t(MemoryLayout<Int32>.size))
        var actions: posix_spawn_file_actions_t? = nil
        #else
        var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, sockets[1], STDIN_FILENO)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
        close(sockets[1])
        guard rc == 0 else {
            close(sockets[0])
            return .failure(.spawn(errno: rc))
        }
        let failure = standardInput.withUnsafeBytes { Self.sendAll(sockets[0], $0) }
        close(sockets[0])
        return .success(Spawned(pid: pid, sendFailure: failure))
    }

    /// Sends every byte without blocking and without SIGPIPE; returns 0 or the errno that stopped it.
    private static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        #if canImport(Darwin)
        let flags = MSG_DONTWAIT
        #else
        let flags = Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)
        #endif
        var offset = 0
        while offset < bytes.count {
            let sent = send(fd, bytes.baseAddress! + offset, bytes.count - offset, flags)
            if sent < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += sent
        }
        return 0
    }

    /// What a hook's process is doing.
    enum ProcessState {
        case running
        /// Ended: its exit code and the signal that ended it (0 for none).
        case exited(exitCode: Int32, signal: Int32)
        /// `waitpid` failed with this errno.
        case failed(errno: Int32)
    }

    /// `waitpid(pid, WNOHANG)`, EINTR retried.
    static func reap(_ pid: Int32) -> ProcessState {
        var status: Int32 = 0
        while true {
            let rc = waitpid(pid, &status, WNOHANG)
            if rc == pid {
                // WIFEXITED / WEXITSTATUS are macros; decode the status word by hand.
                return .exited(exitCode: (status >> 8) & 0xff, signal: status & 0x7f)
            }
            if rc == 0 { return .running }
            if errno != EINTR { return .failed(errno: errno) }
        }
    }

    /// Kills a hook's process (SIGKILL) and reaps it.
    static func terminate(_ pid: Int32) {
        var status: Int32 = 0
        _ = kill(pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
    }
}
