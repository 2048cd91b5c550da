import Locking
public import Logging

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

    private func spawn(line: [UInt8]) -> Int32? {
        switch Platform.spawn(self.arguments, standardInput: line) {
        case .failure(.socketPair(let errno)):
            self.logger.error("call hook: socketpair failed", metadata: ["errno": "\(errno)"])
            return nil
        case .failure(.spawn(let errno)):
            self.logger.error(
                "call hook could not start",
                metadata: ["program": "\(self.arguments[0])", "errno": "\(errno)"]
            )
            return nil
        case .success(let spawned):
            if spawned.sendFailure != 0 {
                self.logger.warning(
                    "call hook did not take the whole event",
                    metadata: ["errno": "\(spawned.sendFailure)"]
                )
            }
            return spawned.pid
        }
    }

    private static func reap(pid: Int32, timeout: Duration, logger: Logger) async {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var delay = Duration.milliseconds(5)
        while true {
            switch Platform.reap(pid) {
            case .running:
                break
            case .failed(let errno):
                logger.error("call hook: waitpid failed", metadata: ["errno": "\(errno)"])
                return
            case .exited(let exitCode, let signal):
                if signal != 0 || exitCode != 0 {
                    logger.warning("call hook failed", metadata: ["exitCode": "\(exitCode)", "signal": "\(signal)"])
                }
                return
            }
            if clock.now >= deadline {
                Platform.terminate(pid)
                logger.warning("call hook killed after timeout", metadata: ["timeout": "\(timeout)"])
                return
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .milliseconds(200))
        }
    }
}
