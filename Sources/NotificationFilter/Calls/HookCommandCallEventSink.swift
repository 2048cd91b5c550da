import Locking
public import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A sink that runs a command for each event, with the event's JSON line on the command's stdin.
///
/// The command is started with `posix_spawnp` (no shell unless you name one, for example
/// `["/bin/sh", "-c", "cat >> /var/log/calls"]`); its stdin is one end of a Unix socket pair so a
/// command that exits without reading cannot raise SIGPIPE in the daemon; its stdout goes to
/// `/dev/null` (the daemon's stdout is machine output) and its stderr is inherited. ``emit(_:)``
/// only spawns and writes one line without blocking; a background task reaps the process and kills
/// it after ``timeout``. At most ``maximumConcurrent`` hooks run at once; events beyond that are
/// dropped and logged. Failures are logged, never thrown.
public final class HookCommandCallEventSink: CallEventSink {
    private let arguments: [String]
    private let logger: Logger
    private let running = PThreadMutex(0)
    /// How long one hook may run before it is killed.
    public let timeout: Duration
    /// How many hooks may run at once.
    public let maximumConcurrent: Int

    /// Creates a sink that runs `arguments` (program first, found on `PATH`) per event.
    ///
    /// - Parameters:
    ///   - arguments: The program and its arguments.
    ///   - timeout: How long a hook may run before it is killed. Default 10 s.
    ///   - maximumConcurrent: How many hooks may run at once. Default 8.
    ///   - logger: Where spawn failures, non-zero exits and timeouts are logged.
    /// - Throws: ``FilterError`` `.invalidHookCommand` for an empty command.
    public init(
        arguments: [String],
        timeout: Duration = .seconds(10),
        maximumConcurrent: Int = 8,
        logger: Logger
    ) throws(FilterError) {
        guard let program = arguments.first, !program.isEmpty else {
            throw FilterError(code: .invalidHookCommand, message: "the call hook command is empty; name a program")
        }
        self.arguments = arguments
        self.timeout = timeout
        self.maximumConcurrent = max(1, maximumConcurrent)
        self.logger = logger
    }

    /// Creates a sink that runs a shell command line (`/bin/sh -c command`) per event.
    ///
    /// - Parameters:
    ///   - command: The shell command line, for example `cat >> /var/log/calls.jsonl`.
    ///   - timeout: How long a hook may run before it is killed. Default 10 s.
    ///   - logger: Where spawn failures, non-zero exits and timeouts are logged.
    /// - Throws: ``FilterError`` `.invalidHookCommand` for an empty command.
    public convenience init(command: String, timeout: Duration = .seconds(10), logger: Logger) throws(FilterError) {
        guard !command.allSatisfy(\.isWhitespace) else {
            throw FilterError(code: .invalidHookCommand, message: "the call hook command is empty; name a command")
        }
        try self.init(arguments: ["/bin/sh", "-c", command], timeout: timeout, logger: logger)
    }

    /// How many hook processes are running now.
    public var runningCount: Int { running.withLock { $0 } }

    public func emit(_ event: CallEvent) {
        let admitted = running.withLock { count -> Bool in
            guard count < maximumConcurrent else { return false }
            count += 1
            return true
        }
        guard admitted else {
            logger.warning("call hook dropped: too many running", metadata: ["event": "\(event.event)"])
            return
        }
        guard let pid = spawn(line: Array((event.jsonLine() + "\n").utf8)) else {
            running.withLock { $0 -= 1 }
            return
        }
        let timeout = self.timeout
        let logger = self.logger
        Task.detached {
            await Self.reap(pid: pid, timeout: timeout, logger: logger)
            self.running.withLock { $0 -= 1 }
        }
    }

    /// Waits until no hook is running, or `timeout` passes; returns whether all hooks finished.
    ///
    /// - Parameter timeout: How long to wait at most.
    /// - Returns: `true` if no hook is running.
    public func waitUntilIdle(timeout: Duration = .seconds(30)) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while runningCount > 0 {
            if clock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    private func spawn(line: [UInt8]) -> pid_t? {
        var sockets: [Int32] = [-1, -1]
        #if canImport(Darwin)
        let socketType = SOCK_STREAM
        #else
        let socketType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #endif
        guard socketpair(AF_UNIX, socketType, 0, &sockets) == 0 else {
            logger.error("call hook: socketpair failed", metadata: ["errno": "\(errno)"])
            return nil
        }
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
            logger.error("call hook could not start", metadata: ["program": "\(arguments[0])", "errno": "\(rc)"])
            return nil
        }
        let failure = line.withUnsafeBytes { sendAll(sockets[0], $0) }
        close(sockets[0])
        if failure != 0 {
            logger.warning("call hook did not take the whole event", metadata: ["errno": "\(failure)"])
        }
        return pid
    }

    /// Sends every byte without blocking and without SIGPIPE; returns 0 or the errno that stopped it.
    private func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
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

    private static func reap(pid: pid_t, timeout: Duration, logger: Logger) async {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var delay = Duration.milliseconds(5)
        var status: Int32 = 0
        while true {
            let rc = waitpid(pid, &status, WNOHANG)
            if rc == pid { break }
            if rc < 0 && errno != EINTR {
                logger.error("call hook: waitpid failed", metadata: ["errno": "\(errno)"])
                return
            }
            if clock.now >= deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                logger.warning("call hook killed after timeout", metadata: ["timeout": "\(timeout)"])
                return
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .milliseconds(200))
        }
        // WIFEXITED / WEXITSTATUS are macros; decode the status word by hand.
        let signal = status & 0x7f
        let exitCode = (status >> 8) & 0xff
        if signal != 0 || exitCode != 0 {
            logger.warning("call hook failed", metadata: ["exitCode": "\(exitCode)", "signal": "\(signal)"])
        }
    }
}
