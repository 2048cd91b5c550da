import APNsGateway
import Crypto
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs the real `e2ee-gateway` executable that `swift test` builds next to the test bundle.
enum GatewayExecutable {
    static func path() throws -> String {
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var directory = (exe as NSString).deletingLastPathComponent
        for _ in 0..<4 {
            let candidate = (directory as NSString).appendingPathComponent("e2ee-gateway")
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = (directory as NSString).deletingLastPathComponent
        }
        throw MissingExecutable()
    }

    struct MissingExecutable: Error, CustomStringConvertible {
        var description: String { "e2ee-gateway was not built next to the tests: run `swift build` first" }
    }

    static func start(_ arguments: [String]) throws -> (Process, stdout: Pipe, stderr: Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try self.path())
        process.arguments = arguments
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        return (process, stdout, stderr)
    }

    /// Runs to completion and returns the exit status and both outputs.
    static func run(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let (process, stdout, stderr) = try self.start(arguments)
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        await self.waitForExit(process)
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    static func waitForExit(_ process: Process, timeout: Duration = .seconds(60)) async {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// `e2ee-gateway serve` started as a user starts it: a fresh provider key, a port file, a TLS folder.
struct ServedGateway: ~Copyable {
    let directory: TemporaryDirectory
    let process: Process
    let stdout: Pipe
    let stderr: Pipe
    let key: TestProviderKey
    let tlsDir: String
    let portFile: String

    static func start() async throws -> ServedGateway {
        let directory = try TemporaryDirectory()
        let keyDir = directory.file("keys")
        let made = try await GatewayExecutable.run([
            "provider-key", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--out-dir", keyDir,
        ])
        try #require(made.status == 0)
        let p8 = try String(
            contentsOfFile: (keyDir as NSString).appendingPathComponent("AuthKey_KEY1234567.p8"),
            encoding: .utf8
        )
        let key = TestProviderKey(privateKey: try P256.Signing.PrivateKey(pemRepresentation: p8))
        let portFile = directory.file("port")
        let tlsDir = directory.file("tls")
        let (process, stdout, stderr) = try GatewayExecutable.start([
            "serve", "--port", "0", "--port-file", portFile, "--tls-dir", tlsDir, "--topic", testTopic,
            "--provider-key",
            "TEAM123456:KEY1234567:\((keyDir as NSString).appendingPathComponent("AuthKey_KEY1234567.pub.pem"))",
        ])
        return ServedGateway(
            directory: directory,
            process: process,
            stdout: stdout,
            stderr: stderr,
            key: key,
            tlsDir: tlsDir,
            portFile: portFile
        )
    }

    /// The port the gateway wrote to its port file (waits up to 60 s for it).
    func port() async throws -> Int {
        var port: Int?
        let deadline = ContinuousClock.now + .seconds(60)
        while port == nil, self.process.isRunning, ContinuousClock.now < deadline {
            port = (try? String(contentsOfFile: self.portFile, encoding: .utf8))
                .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if port == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        return try #require(port)
    }
}

@Suite("e2ee-gateway command line")
struct CommandLineTests {
    @Test("provider-key writes AuthKey_<K>.p8 (PKCS#8 PEM, 0600) and its public key, and never overwrites")
    func providerKey() async throws {
        let directory = try TemporaryDirectory()
        let outDir = directory.file("keys")
        let result = try await GatewayExecutable.run([
            "provider-key", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--out-dir", outDir,
        ])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let p8 = (outDir as NSString).appendingPathComponent("AuthKey_KEY1234567.p8")
        let pub = (outDir as NSString).appendingPathComponent("AuthKey_KEY1234567.pub.pem")
        let p8Text = try String(contentsOfFile: p8, encoding: .utf8)
        #expect(p8Text.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let privateKey = try P256.Signing.PrivateKey(pemRepresentation: p8Text)
        let publicKey = try P256.Signing.PublicKey(pemRepresentation: String(contentsOfFile: pub, encoding: .utf8))
        #expect(privateKey.publicKey.rawRepresentation == publicKey.rawRepresentation)
        let mode = try FileManager.default.attributesOfItem(atPath: p8)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        #expect(result.stdout.contains(#""private_key":"\#(p8)""#))

        let again = try await GatewayExecutable.run([
            "provider-key", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--out-dir", outDir,
        ])
        #expect(again.status == 73)
        #expect(again.stderr.contains("exists already"))
        #expect(try String(contentsOfFile: p8, encoding: .utf8) == p8Text, "the existing key is untouched")
    }

    @Test("bad arguments exit 64 with a message saying what to fix")
    func badArguments() async throws {
        let directory = try TemporaryDirectory()
        let result = try await GatewayExecutable.run([
            "serve", "--tls-dir", directory.file("tls"), "--provider-key", "T:K:/nonexistent",
        ])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--topic"))
    }

    @Test("serve: port file, listening line, a push printed as one JSON line on stdout, SIGTERM exits 0")
    func serveDeliversToStdoutAndStopsOnSIGTERM() async throws {
        let served = try await ServedGateway.start()
        let (process, stdout, stderr, key, tlsDir) = (
            served.process, served.stdout, served.stderr, served.key, served.tlsDir
        )
        defer { if process.isRunning { process.terminate() } }
        let boundPort = try await served.port()
        let client = try await H2TestClient.connect(
            port: boundPort,
            caPath: (tlsDir as NSString).appendingPathComponent("ca.pem")
        )
        let response = try await client.send(
            headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
            body: sampleBody
        )
        await client.close()
        #expect(response.status == 200)

        kill(process.processIdentifier, SIGTERM)
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        await GatewayExecutable.waitForExit(process)
        #expect(!process.isRunning)
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0, "stderr: \(err)")
        #expect(err.contains("listening on https://127.0.0.1:\(boundPort)"))
        let lines = String(decoding: out, as: UTF8.self).split(separator: "\n")
        try #require(lines.count == 1)
        let record = try DeliveryRecord.parse(jsonLine: lines[0])
        #expect(record.seq == 1)
        #expect(record.bodyBytes == sampleBody)
        #expect(record.apnsID == response.header("apns-id"))
    }

    @Test("serve with its stdout reader gone: the push is answered 500, the gateway lives on, SIGTERM exits 0")
    func closedStdoutIsAnErrorNotASignal() async throws {
        let served = try await ServedGateway.start()
        let (process, stdout, stderr, key, tlsDir) = (
            served.process, served.stdout, served.stderr, served.key, served.tlsDir
        )
        defer { if process.isRunning { process.terminate() } }
        try stdout.fileHandleForReading.close()
        let boundPort = try await served.port()
        let client = try await H2TestClient.connect(
            port: boundPort,
            caPath: (tlsDir as NSString).appendingPathComponent("ca.pem")
        )
        let response = try await client.send(
            headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
            body: sampleBody
        )
        await client.close()
        #expect(response.status == 500)
        #expect(process.isRunning)
        kill(process.processIdentifier, SIGTERM)
        let err = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        await GatewayExecutable.waitForExit(process)
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0, "stderr: \(err)")
        #expect(err.contains("delivery sink failed; answering 500"))
    }
}
