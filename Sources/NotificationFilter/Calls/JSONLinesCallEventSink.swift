import Locking
public import Logging
import SystemPackage

/// A sink that appends each event as one JSON line to a file descriptor (a file or stdout).
///
/// It writes whole lines with swift-system's `FileDescriptor` (EINTR and short writes retried there; no
/// `FileHandle`, no buffering beyond one line), so a line is on its way to the file before ``emit(_:)`` returns and a
/// killed process loses at most the line being written. Lines from concurrent emits never interleave. Write failures
/// are logged once per errno and dropped. Writing to a closed pipe raises SIGPIPE: a daemon that writes events to
/// stdout should ignore SIGPIPE.
public final class JSONLinesCallEventSink: CallEventSink {
    private struct State {
        var lastLoggedErrno: Int32 = 0
    }

    private let fd: FileDescriptor
    private let ownsDescriptor: Bool
    private let logger: Logger
    private let state = PThreadMutex(State())

    /// Writes to an open descriptor, which the caller keeps open and closes after the sink is gone.
    ///
    /// - Parameters:
    ///   - fileDescriptor: The descriptor (for example `STDOUT_FILENO`).
    ///   - logger: Where write failures are logged.
    public init(fileDescriptor: Int32, logger: Logger) {
        self.fd = FileDescriptor(rawValue: fileDescriptor)
        self.ownsDescriptor = false
        self.logger = logger
    }

    /// Appends to the file at `path`, creating it with mode 0600 if needed.
    ///
    /// - Parameters:
    ///   - path: The events file.
    ///   - logger: Where write failures are logged.
    /// - Throws: ``FilterError`` `.cannotOpen` when the file cannot be opened.
    public init(path: String, logger: Logger) throws(FilterError) {
        do {
            self.fd = try FileDescriptor.open(
                FilePath(path),
                .writeOnly,
                options: [.create, .append, .closeOnExec],
                permissions: [.ownerReadWrite]
            )
        } catch {
            let errno = (error as? Errno).map { "errno \($0.rawValue)" } ?? "\(error)"
            throw FilterError(
                code: .cannotOpen,
                message: "cannot open call events file \(path) (\(errno)); check the directory exists and is writable"
            )
        }
        self.ownsDescriptor = true
        self.logger = logger
    }

    deinit {
        if self.ownsDescriptor { try? self.fd.close() }
    }

    public func emit(_ event: CallEvent) {
        var line = Array((event.jsonLine() + "\n").utf8)
        self.state.withLock { state in
            var failure: Int32 = 0
            do {
                _ = try self.fd.writeAll(line)
            } catch {
                failure = (error as? Errno)?.rawValue ?? -1
            }
            if failure != 0, failure != state.lastLoggedErrno {
                state.lastLoggedErrno = failure
                self.logger.error(
                    "cannot write call event",
                    metadata: ["errno": "\(failure)", "event": "\(event.event)"]
                )
            }
        }
        line.removeAll()
    }
}
