import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The built `e2ee-filter` executable, found next to the test bundle or in the package's build folders.
enum FilterBinary {
    /// The path of `e2ee-filter`, or a failure that says where it was looked for and how to build it.
    static func path(filePath: String = #filePath) throws -> String {
        var candidates: [String] = []
        // 1. The folder of the test bundle (`.build*/<triple>/debug/…PackageTests.xctest`) and its parents.
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(folder.appendingPathComponent("e2ee-filter").path)
            folder.deleteLastPathComponent()
        }
        // 2. `<package>/.build*/<triple>/debug/e2ee-filter`, the package found from this file's path.
        let package = URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let builds = ((try? FileManager.default.contentsOfDirectory(atPath: package.path)) ?? [])
            .filter { $0.hasPrefix(".build") }.sorted()
        for build in builds {
            let root = package.appendingPathComponent(build)
            for triple in ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).sorted() {
                candidates.append(root.appendingPathComponent(triple).appendingPathComponent("debug/e2ee-filter").path)
            }
        }
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            return found
        }
        throw ProcessTestError(
            "e2ee-filter is not built: looked in \(candidates.joined(separator: ", ")); "
                + "run `swift build --product e2ee-filter` (swift test builds it too)"
        )
    }
}

/// A failure of the process-test harness itself, with what to do.
struct ProcessTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One `e2ee-filter` child process, its stdout and stderr in files (no pipe can fill up and stall it).
final class FilterProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` is only started in `init` and afterwards only read (`isRunning`,
    // `terminationStatus`, `processIdentifier` are thread-safe in Foundation); the other fields are immutable.
    let process: Process
    let stdoutPath: String
    let stderrPath: String

    /// Starts `e2ee-filter` with `arguments`.
    ///
    /// - Parameters:
    ///   - arguments: the subcommand and its flags.
    ///   - stdin: a file given as standard input, or nil for /dev/null.
    ///   - directory: where stdout and stderr files are written.
    ///   - name: a prefix for those files.
    ///   - environment: variables set for the child on top of the inherited ones (after those cleared below).
    init(
        arguments: [String],
        stdin: String? = nil,
        directory: String,
        name: String,
        environment extra: [String: String] = [:]
    ) throws {
        self.stdoutPath = directory + "/\(name).stdout"
        self.stderrPath = directory + "/\(name).stderr"
        _ = FileManager.default.createFile(atPath: self.stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: self.stderrPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try FilterBinary.path())
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["E2EE_FILTER_NOW_MS"] = nil  // real time: the spools are built to be time-independent
        environment["E2EE_IDENTITY_FILE"] = nil
        environment.merge(extra) { $1 }
        process.environment = environment
        process.standardInput = stdin.flatMap { FileHandle(forReadingAtPath: $0) } ?? FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: self.stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: self.stderrPath)
        try process.run()
        self.process = process
    }

    var pid: Int32 { self.process.processIdentifier }

    func signal(_ signal: Int32) {
        if self.process.isRunning { kill(self.pid, signal) }
    }

    /// Waits for the process to end (polling, so no thread is blocked), killing it after `timeout`.
    ///
    /// - Returns: the exit status, or 128 + signal number for a process ended by a signal.
    @discardableResult
    func wait(timeout: Duration = .seconds(300)) async throws -> Int32 {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while self.process.isRunning {
            if clock.now > deadline {
                kill(self.pid, SIGKILL)
                self.process.waitUntilExit()
                throw ProcessTestError("e2ee-filter (pid \(self.pid)) did not exit within \(timeout); killed it")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        self.process.waitUntilExit()
        return self.process.terminationReason == .uncaughtSignal
            ? 128 + self.process.terminationStatus : self.process.terminationStatus
    }

    var standardOutput: [UInt8] { FileManager.default.contents(atPath: self.stdoutPath).map { Array($0) } ?? [] }
    var standardError: String {
        FileManager.default.contents(atPath: self.stderrPath).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Runs `e2ee-filter` to completion.
    ///
    /// - Returns: the exit status, stdout bytes and stderr text.
    static func run(
        _ arguments: [String],
        stdin: String? = nil,
        directory: String,
        name: String,
        environment: [String: String] = [:],
        timeout: Duration = .seconds(300)
    ) async throws -> (status: Int32, stdout: [UInt8], stderr: String) {
        let child = try FilterProcess(
            arguments: arguments,
            stdin: stdin,
            directory: directory,
            name: name,
            environment: environment
        )
        let status = try await child.wait(timeout: timeout)
        return (status, child.standardOutput, child.standardError)
    }
}

/// Reading the JSON-lines files the filter writes.
enum JSONLines {
    /// The whole lines of a file; `torn` is true when the file does not end with a newline.
    static func read(_ path: String) -> (lines: [String], torn: Bool) {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return ([], false) }
        return self.split(Array(data))
    }

    static func split(_ bytes: [UInt8]) -> (lines: [String], torn: Bool) {
        guard !bytes.isEmpty else { return ([], false) }
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        let torn = bytes.last != 0x0A
        if !torn { lines.removeLast() }
        return (lines, torn)
    }

    static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// The `seq` of every decision line (nil for a line that is not a decision).
    static func seqs(_ lines: [String]) -> [Int64?] {
        lines.map { line in (self.object(line)?["seq"] as? NSNumber)?.int64Value }
    }

    /// Counts the lines of a file (0 if it does not exist).
    static func count(_ path: String) -> Int {
        guard let data = FileManager.default.contents(atPath: path) else { return 0 }
        return data.reduce(0) { $1 == 0x0A ? $0 + 1 : $0 }
    }
}
