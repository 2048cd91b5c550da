import Foundation
import TestSupport
import Testing

@testable import Relay

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One `e2ee-relay serve` child process (a ``ChildProcess``), stderr in a file of the test's folder.
final class RelayProcess: Sendable {
    let child: ChildProcess
    let port: Int
    let caPath: String

    /// Starts `e2ee-relay serve` on a free port and waits for its port file.
    init(
        folder: TemporaryFolder,
        name: String,
        database: String,
        apnsURL: String,
        apnsCA: String,
        keyFile: String,
        extra: [String] = [],
        // Generous by default: with the whole suite on two cores (under a sanitizer in CI) a handshake or a first
        // request can take seconds; only tests of the deadlines make them short.
        deadlines: [String] = [
            "--tls-handshake-timeout", "300", "--request-head-timeout", "300", "--request-timeout", "300",
        ],
        ignoringFileSizeSignal: Bool = false,
        limitingFileDescriptors descriptors: Int? = nil
    )
        async throws
    {
        let portFile = folder.file("\(name).port")
        try? FileManager.default.removeItem(atPath: portFile)
        let stderrPath = folder.file("\(name).stderr")
        let arguments =
            [
                "serve", "--database", database, "--port", "0", "--port-file", portFile,
                "--self-signed-tls-dir", folder.file("\(name)-tls"),
                "--apns-url", apnsURL, "--apns-ca", apnsCA, "--apns-key-file", keyFile,
                "--apns-key-id", GatewayFixture.keyID, "--apns-team-id", GatewayFixture.teamID,
                "--apns-topic", GatewayFixture.topic,
                "--lease-seconds", "15", "--log-level", "debug", "--recipient-rate", "6000", "--token-rate", "6000",
                // A loopback TLS handshake can take seconds under a sanitizer on shared cores.
                "--apns-connect-timeout", "60",
            ] + deadlines + extra
        // A write past RLIMIT_FSIZE then fails with EFBIG instead of killing the process with SIGXFSZ (an ignored
        // signal stays ignored across exec), as a write to a full disk fails with ENOSPC.
        // With `descriptors`, the relay runs under that open-file limit (as a service with `ulimit -n` set).
        let limit = descriptors.map { "ulimit -n \($0) && " } ?? ""
        let trap = ignoringFileSizeSignal ? "trap '' XFSZ; " : ""
        let prefix = limit.isEmpty && trap.isEmpty ? [] : ["/bin/sh", "-c", "\(trap)\(limit)exec \"$0\" \"$@\""]
        let child = try ChildProcess(
            "e2ee-relay",
            arguments,
            stdout: .discard,
            stderr: .file(stderrPath),
            prefix: prefix
        )
        self.child = child
        self.caPath = folder.file("\(name)-tls/ca.pem")
        var port: Int?
        for _ in 0..<600 {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
                let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                port = value
                break
            }
            guard child.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard let port else {
            child.signal(SIGTERM)
            throw ProcessTestError("e2ee-relay did not start: \(child.standardError.suffix(2000))")
        }
        self.port = port
    }

    var baseURL: String { "https://127.0.0.1:\(self.port)" }
    var pid: Int32 { self.child.pid }
    var isRunning: Bool { self.child.isRunning }

    func signal(_ value: Int32) { self.child.signal(value) }

    /// Kills the process if it still runs (tests call it on every path out).
    func stop() { self.signal(SIGKILL) }

    /// Waits for the process to exit (killing it and failing after 60 s) and returns its status: the exit status,
    /// or 128 + the signal number for a process ended by a signal.
    func waitForExit() async throws -> Int32 {
        try await self.child.wait(timeout: .seconds(60))
    }

    var stderr: String { self.child.standardError }
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
