import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `e2ee-filter` as a child process: the shared ``ChildProcess`` runner, with stdout and stderr in files of the
/// test's folder (no pipe can fill up and stall it) and the filter's clock and identity variables cleared.
typealias FilterProcess = ChildProcess

extension ChildProcess {
    /// Starts `e2ee-filter` with `arguments`.
    ///
    /// - Parameters:
    ///   - arguments: the subcommand and its flags.
    ///   - stdin: a file given as standard input, or nil for /dev/null.
    ///   - directory: where stdout and stderr files are written.
    ///   - name: a prefix for those files.
    ///   - environment: variables set for the child on top of the inherited ones (after those cleared below).
    convenience init(
        arguments: [String],
        stdin: String? = nil,
        directory: String,
        name: String,
        environment extra: [String: String] = [:]
    ) throws {
        try self.init(
            "e2ee-filter",
            arguments,
            stdin: stdin.map { .file($0) } ?? .nothing,
            stdout: .file(directory + "/\(name).stdout"),
            stderr: .file(directory + "/\(name).stderr"),
            environment: Self.filterEnvironment(extra)
        )
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
    ) async throws -> ProcessOutput {
        try await Self.run(
            "e2ee-filter",
            arguments,
            stdin: stdin.map { .file($0) } ?? .nothing,
            stdout: .file(directory + "/\(name).stdout"),
            stderr: .file(directory + "/\(name).stderr"),
            environment: Self.filterEnvironment(environment),
            timeout: timeout
        )
    }

    /// No identity from the environment, then `extra`.
    private static func filterEnvironment(_ extra: [String: String]) -> [String: String?] {
        var environment: [String: String?] = ["E2EE_IDENTITY_FILE": nil]
        for (name, value) in extra { environment[name] = value }
        return environment
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
