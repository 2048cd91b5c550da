public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure of a process test's harness itself (an executable not built, a child that never exits), with what
/// to do about it.
public struct ProcessTestError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// What a finished child process left: its exit status and both outputs.
public struct ProcessOutput: Sendable {
    /// The exit status, or 128 + the signal number for a process ended by a signal (as a shell reports it).
    public var status: Int32
    public var stdout: [UInt8]
    public var stderr: String

    /// Standard output as UTF-8 text.
    public var stdoutText: String { String(decoding: self.stdout, as: UTF8.self) }
}

/// One of the package's executables run as a child process by a test: the one process runner of the test suites.
///
/// Standard input is nothing (`/dev/null`), a file, or bytes (written to a file first, so no pipe can fill up).
/// Each output goes to a file (the default: a child can never stall on a full pipe), to a pipe the test reads
/// while the child runs (or closes to play a reader that went away), or to `/dev/null`.
///
/// A command prefix runs the executable under another program that execs it (`setpriv … --` to drop root,
/// `/bin/sh -c 'trap "" XFSZ; exec "$0" "$@"'` to ignore a signal across exec): the executable's path and the
/// arguments follow the prefix, and the exit status is the prefix program's (the executable's, once it has exec'd).
public final class ChildProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` is only started in `init` and afterwards only read (`isRunning`,
    // `terminationStatus`, `processIdentifier` are thread-safe in Foundation); the other fields are immutable.

    /// Where standard input comes from.
    public enum Input: Sendable {
        case nothing
        case file(String)
        case bytes([UInt8])
    }

    /// Where an output goes.
    public enum Output: Sendable {
        /// A file at this path (created or truncated).
        case file(String)
        /// A pipe, read by the test through ``stdoutPipe`` or ``stderrPipe``.
        case pipe
        /// `/dev/null`: the output is thrown away.
        case discard
    }

    public let process: Process
    /// The stdout file, when stdout goes to a file.
    public let stdoutPath: String?
    /// The stderr file, when stderr goes to a file.
    public let stderrPath: String?
    /// The stdout pipe, when stdout goes to a pipe.
    public let stdoutPipe: Pipe?
    /// The stderr pipe, when stderr goes to a pipe.
    public let stderrPipe: Pipe?
    /// The product name, for messages.
    public let name: String
    private let scratch: String?

    /// Starts one of the package's executables.
    ///
    /// - Parameters:
    ///   - executable: The product name (`e2ee-send`, `e2ee-filter`, `e2ee-gateway`, `e2ee-relay`), found by
    ///     ``TestExecutable/path(_:)``.
    ///   - arguments: The subcommand and its flags.
    ///   - stdin: Standard input (default: nothing).
    ///   - stdout: Where standard output goes (default: a file in a fresh temporary folder).
    ///   - stderr: Where standard error goes (default: a file in a fresh temporary folder).
    ///   - environment: Changes to the inherited environment: a value sets a variable, `nil` removes it.
    ///   - prefix: A command that runs the executable: its first element is the program started (an absolute
    ///     path), the rest its first arguments, followed by the executable's path and `arguments` (default: none,
    ///     the executable is started itself).
    /// - Throws: ``ProcessTestError`` when the executable is not built; what `Process.run()` throws.
    public init(
        _ executable: String,
        _ arguments: [String],
        stdin: Input = .nothing,
        stdout: Output? = nil,
        stderr: Output? = nil,
        environment: [String: String?] = [:],
        prefix: [String] = []
    ) throws {
        let path = try TestExecutable.path(executable)
        var scratch: String?
        func scratchFile(_ name: String) throws -> String {
            if scratch == nil {
                let folder = NSTemporaryDirectory() + "child-\(executable)-\(UUID().uuidString)"
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                scratch = folder
            }
            return scratch! + "/" + name
        }
        let process = Process()
        let command = prefix + [path] + arguments
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        var inherited = ProcessInfo.processInfo.environment
        for (name, value) in environment { inherited[name] = value }
        process.environment = inherited

        switch stdin {
        case .nothing:
            process.standardInput = FileHandle.nullDevice
        case .file(let file):
            guard let handle = FileHandle(forReadingAtPath: file) else {
                throw ProcessTestError("cannot open \(file) as standard input of \(executable)")
            }
            process.standardInput = handle
        case .bytes(let bytes):
            let file = try scratchFile("stdin")
            _ = FileManager.default.createFile(atPath: file, contents: Data(bytes))
            process.standardInput = FileHandle(forReadingAtPath: file)
        }

        func attach(_ output: Output?, name: String) throws -> (path: String?, pipe: Pipe?, handle: Any) {
            let output = try output ?? .file(scratchFile(name))
            switch output {
            case .file(let file):
                _ = FileManager.default.createFile(atPath: file, contents: nil)
                guard let handle = FileHandle(forWritingAtPath: file) else {
                    throw ProcessTestError("cannot write \(file) for the \(name) of \(executable)")
                }
                return (file, nil, handle)
            case .pipe:
                let pipe = Pipe()
                return (nil, pipe, pipe)
            case .discard:
                return (nil, nil, FileHandle.nullDevice)
            }
        }
        let out = try attach(stdout, name: "stdout")
        let err = try attach(stderr, name: "stderr")
        process.standardOutput = out.handle
        process.standardError = err.handle
        try process.run()
        self.process = process
        self.stdoutPath = out.path
        self.stdoutPipe = out.pipe
        self.stderrPath = err.path
        self.stderrPipe = err.pipe
        self.name = executable
        self.scratch = scratch
    }

    deinit {
        if let scratch = self.scratch { try? FileManager.default.removeItem(atPath: scratch) }
    }

    public var pid: Int32 { self.process.processIdentifier }
    public var isRunning: Bool { self.process.isRunning }

    /// Sends `signal` if the child is still running.
    public func signal(_ signal: Int32) {
        if self.process.isRunning { kill(self.pid, signal) }
    }

    /// Waits for the child to end, polling so no thread is blocked; kills it after `timeout`.
    ///
    /// - Returns: The exit status, or 128 + signal number for a child ended by a signal.
    /// - Throws: ``ProcessTestError`` when the child had to be killed.
    @discardableResult
    public func wait(timeout: Duration = .seconds(300)) async throws -> Int32 {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while self.process.isRunning {
            if clock.now > deadline {
                kill(self.pid, SIGKILL)
                self.process.waitUntilExit()
                throw ProcessTestError(
                    "\(self.name) (pid \(self.pid)) did not exit "
                        + "within \(timeout); killed it"
                )
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return self.exitStatus()
    }

    private func exitStatus() -> Int32 {
        self.process.waitUntilExit()
        return self.process.terminationReason == .uncaughtSignal
            ? 128 + self.process.terminationStatus : self.process.terminationStatus
    }

    /// Standard output so far: the file's contents, or the pipe read to its end (empty when discarded).
    public var standardOutput: [UInt8] {
        if let path = self.stdoutPath { return FileManager.default.contents(atPath: path).map { Array($0) } ?? [] }
        return self.stdoutPipe.map { Array($0.fileHandleForReading.readDataToEndOfFile()) } ?? []
    }

    /// Standard error so far, as text: the file's contents, or the pipe read to its end (empty when discarded).
    public var standardError: String {
        if let path = self.stderrPath {
            return FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } ?? ""
        }
        return self.stderrPipe.map { String(decoding: $0.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
            ?? ""
    }

    /// Runs an executable to completion.
    ///
    /// There is deliberately no blocking variant: a test that blocks its thread while a child runs holds one of
    /// Swift concurrency's cooperative threads (two on a 2-core machine), and a few such tests at once stall every
    /// other test's async work in the process. That is how the PostgreSQL tests' 10-second "does the server answer"
    /// window ran out while the server was idle, whenever synchronous CLI tests ran beside them.
    ///
    /// - Parameters: as ``init(_:_:stdin:stdout:stderr:environment:prefix:)``, plus `timeout` (the child is killed
    ///   and the run fails after it).
    /// - Returns: The exit status and both outputs.
    public static func run(
        _ executable: String,
        _ arguments: [String],
        stdin: Input = .nothing,
        stdout: Output? = nil,
        stderr: Output? = nil,
        environment: [String: String?] = [:],
        prefix: [String] = [],
        timeout: Duration = .seconds(300)
    ) async throws -> ProcessOutput {
        let child = try ChildProcess(
            executable,
            arguments,
            stdin: stdin,
            stdout: stdout,
            stderr: stderr,
            environment: environment,
            prefix: prefix
        )
        let status = try await child.wait(timeout: timeout)
        return ProcessOutput(status: status, stdout: child.standardOutput, stderr: child.standardError)
    }
}

/// Finds the package's built executables.
public enum TestExecutable: Sendable {
    /// The path of a built executable of this package, or a failure that says where it was looked for and how to
    /// build it.
    ///
    /// Looks next to the running test bundle (`.build/<triple>/debug/…PackageTests.xctest`) and its parents, then
    /// in `<package>/.build*/<triple>/debug` and `<package>/.build/debug`.
    public static func path(_ name: String, filePath: String = #filePath) throws -> String {
        var candidates: [String] = []
        var starts: [URL] = [URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()]
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            starts.append(URL(fileURLWithPath: exe))
        }
        for start in starts {
            var folder = start.deletingLastPathComponent()
            for _ in 0..<5 {
                candidates.append(folder.appendingPathComponent(name).path)
                folder.deleteLastPathComponent()
            }
        }
        // Tests/TestSupport/ChildProcess.swift → the package folder.
        let package = URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let builds = ((try? FileManager.default.contentsOfDirectory(atPath: package.path)) ?? [])
            .filter { $0.hasPrefix(".build") }.sorted()
        for build in builds {
            let root = package.appendingPathComponent(build)
            for triple in ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).sorted() {
                candidates.append(root.appendingPathComponent(triple).appendingPathComponent("debug/\(name)").path)
            }
            candidates.append(root.appendingPathComponent("debug/\(name)").path)
        }
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            return found
        }
        throw ProcessTestError(
            "\(name) is not built: looked in \(candidates.joined(separator: ", ")); "
                + "run `swift build --product \(name)` (swift test builds it too)"
        )
    }
}
