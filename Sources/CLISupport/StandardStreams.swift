import SystemPackage

/// Standard output, written whole with swift-system (EINTR retried there): machine output, one JSON line per
/// result. A closed pipe (EPIPE) or a full disk is an ``OutputError``, never a crash or a signal (a tool's main
/// ignores SIGPIPE, ``ToolMain``).
public enum StandardOutput: Sendable {
    /// Writes every byte of `bytes`.
    ///
    /// - Throws: ``OutputError`` saying why (the reader closed the pipe, or the system's reason).
    public static func write(_ bytes: some Collection<UInt8>) throws(OutputError) {
        do {
            _ = try FileDescriptor.standardOutput.writeAll(bytes)
        } catch let error as Errno {
            throw OutputError(error == .brokenPipe ? "the reader closed the pipe" : "\(error)")
        } catch {
            throw OutputError("\(error)")
        }
    }

    /// Writes `line` and a newline.
    public static func writeLine(_ line: String) throws(OutputError) {
        try self.write(Array((line + "\n").utf8))
    }
}

/// Standard input, read with swift-system (EINTR retried there).
public enum StandardInput: Sendable {
    /// Every byte until end of input; what was read before an error, if one stops it.
    public static func readAll() -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = (try? chunk.withUnsafeMutableBytes { try FileDescriptor.standardInput.read(into: $0) }) ?? 0
            if count <= 0 { return bytes }
            bytes += chunk[0..<count]
        }
    }
}

/// Standard error: messages for people. A closed stderr is ignored (there is nowhere left to say it).
public enum StandardError: Sendable {
    /// Writes `text` and a newline.
    public static func writeLine(_ text: String) {
        self.write(text + "\n")
    }

    /// Writes `text` whole: one call per chunk the system takes, again after an interrupted call (EINTR).
    public static func write(_ text: String) {
        _ = try? FileDescriptor.standardError.writeAll(Array(text.utf8))
    }
}

/// Standard output could not be written: the one failure of ``StandardOutput``.
public struct OutputError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why, for people: "the reader closed the pipe", or the system's reason.
    public let reason: String
    /// The message a tool prints: "cannot write to standard output (<reason>)".
    public var message: String { "cannot write to standard output (\(self.reason))" }

    init(_ reason: String) { self.reason = reason }

    public var description: String { self.message }
}
