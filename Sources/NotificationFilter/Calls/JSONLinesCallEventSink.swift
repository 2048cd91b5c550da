import Locking
public import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A sink that appends each event as one JSON line to a file descriptor (a file or stdout).
///
/// It writes with POSIX `write(2)` (no `FileHandle`, no buffering beyond one line), so a line is on
/// its way to the file before ``emit(_:)`` returns and a killed process loses at most the line
/// being written. Lines from concurrent emits never interleave. Write failures are logged once per
/// errno and dropped. Writing to a closed pipe raises SIGPIPE: a daemon that writes events to
/// stdout should ignore SIGPIPE.
public final class JSONLinesCallEventSink: CallEventSink {
    private struct State {
        var lastLoggedErrno: Int32 = 0
    }

    private let fd: Int32
    private let ownsDescriptor: Bool
    private let logger: Logger
    private let state = PThreadMutex(State())

    /// Writes to an open descriptor, which the caller keeps open and closes after the sink is gone.
    ///
    /// - Parameters:
    ///   - fileDescriptor: The descriptor (for example `STDOUT_FILENO`).
    ///   - logger: Where write failures are logged.
    public init(fileDescriptor: Int32, logger: Logger) {
        self.fd = fileDescriptor
        self.ownsDescriptor = false
        self.logger = logger
    }

    /// Appends to the file at `path`, creating it with mode 0600 if needed.
    ///
    /// - Parameters:
    ///   - path: The events file.
    ///   - logger: Where write failures are logged.
    /// - Throws: ``FilterError`` when the file cannot be opened.
    public init(path: String, logger: Logger) throws(FilterError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw FilterError(
                code: .cannotOpen,
                message:
                    "cannot open call events file \(path) (errno \(errno)); check the directory exists and is writable"
            )
        }
        self.fd = fd
        self.ownsDescriptor = true
        self.logger = logger
    }

    deinit {
        if ownsDescriptor { close(fd) }
    }

    public func emit(_ event: CallEvent) {
        var line = Array((event.jsonLine() + "\n").utf8)
        state.withLock { state in
            let failure = line.withUnsafeMutableBytes { writeAll(fd, UnsafeRawBufferPointer($0)) }
            if failure != 0, failure != state.lastLoggedErrno {
                state.lastLoggedErrno = failure
                logger.error("cannot write call event", metadata: ["errno": "\(failure)", "event": "\(event.event)"])
            }
        }
        line.removeAll()
    }
}

/// Writes every byte, retrying short writes and EINTR; returns 0 or the errno that stopped it.
func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    var offset = 0
    while offset < bytes.count {
        let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
        if written < 0 {
            if errno == EINTR { continue }
            return errno
        }
        offset += written
    }
    return 0
}
