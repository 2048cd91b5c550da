import Foundation
import Testing

@testable import Relay

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure of the process-test harness itself, with what to do.
struct ProcessTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One `e2ee-relay serve` child process, stderr in a file.
final class RelayProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` is started in `init` and afterwards only read (`isRunning`,
    // `terminationStatus`, `processIdentifier` are thread-safe in Foundation); the other fields are immutable.
    let process: Process
    let stderrPath: String
    let port: Int
    let caPath: String

    /// The built `e2ee-relay`, next to the test bundle or in the package's build folders.
    static func binary(filePath: String = #filePath) throws -> String {
        var candidates: [String] = []
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(folder.appendingPathComponent("e2ee-relay").path)
            folder.deleteLastPathComponent()
        }
        let package = URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(package.appendingPathComponent(".build/debug/e2ee-relay").path)
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw ProcessTestError(
                "e2ee-relay is not built (looked in \(candidates.joined(separator: ", "))); run `swift build --product e2ee-relay`"
            )
        }
        return found
    }

    /// Starts `e2ee-relay serve` on a free port and waits for its port file.
    init(
        folder: TemporaryFolder,
        name: String,
        database: String,
        apnsURL: String,
        apnsCA: String,
        keyFile: String,
        extra: [String] = [],
        ignoringFileSizeSignal: Bool = false
    )
        async throws
    {
        let portFile = folder.file("\(name).port")
        try? FileManager.default.removeItem(atPath: portFile)
        self.stderrPath = folder.file("\(name).stderr")
        _ = FileManager.default.createFile(atPath: self.stderrPath, contents: nil)
        let process = Process()
        let arguments =
            [
                "serve", "--database", database, "--port", "0", "--port-file", portFile,
                "--self-signed-tls-dir", folder.file("\(name)-tls"),
                "--apns-url", apnsURL, "--apns-ca", apnsCA, "--apns-key-file", keyFile,
                "--apns-key-id", GatewayFixture.keyID, "--apns-team-id", GatewayFixture.teamID,
                "--lease-seconds", "15", "--log-level", "debug", "--recipient-rate", "6000", "--token-rate", "6000",
                // A loopback TLS handshake can take seconds under a sanitizer on shared cores.
                "--apns-connect-timeout", "60",
            ] + extra
        if ignoringFileSizeSignal {
            // A write past RLIMIT_FSIZE then fails with EFBIG instead of killing the process with SIGXFSZ (an
            // ignored signal stays ignored across exec), as a write to a full disk fails with ENOSPC.
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "trap '' XFSZ; exec \"$0\" \"$@\"", try Self.binary()] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: try Self.binary())
            process.arguments = arguments
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: self.stderrPath)
        try process.run()
        self.process = process
        self.caPath = folder.file("\(name)-tls/ca.pem")
        var port: Int?
        for _ in 0..<600 {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
                let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                port = value
                break
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard let port else {
            process.terminate()
            let stderr = (try? String(contentsOfFile: self.stderrPath, encoding: .utf8)) ?? ""
            throw ProcessTestError("e2ee-relay did not start: \(stderr.suffix(2000))")
        }
        self.port = port
    }

    var baseURL: String { "https://127.0.0.1:\(self.port)" }

    func signal(_ value: Int32) {
        guard self.process.isRunning else { return }
        kill(self.process.processIdentifier, value)
    }

    /// Kills the process if it still runs (tests call it on every path out).
    func stop() { self.signal(SIGKILL) }

    /// Waits for the process to exit and returns its status.
    func waitForExit() async throws -> Int32 {
        try await waitUntil(tries: 1200, every: .milliseconds(50)) { !self.process.isRunning }
        guard !self.process.isRunning else {
            self.signal(SIGKILL)
            throw ProcessTestError("e2ee-relay did not exit within 60 s")
        }
        return self.process.terminationStatus
    }

    var stderr: String { (try? String(contentsOfFile: self.stderrPath, encoding: .utf8)) ?? "" }
}

/// Runs `body` with a client of `relay`, shutting the client down however `body` ends. Requests may take 60 s: CI
/// runs these tests under AddressSanitizer with many TLS handshakes at once on two cores.
func withClient<T>(
    _ url: String,
    ca: String,
    timeout: Duration = .seconds(60),
    _ body: (RelayClient) async throws -> T
) async throws -> T {
    let client = try RelayClient(baseURL: url, trustedCAPEMPath: ca, timeout: timeout)
    return try await withCleanup(client, { await $0.shutdown() }, body)
}
