import APNsGateway
import Crypto
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `e2ee-gateway serve` started as a user starts it: a fresh provider key, a port file, a TLS folder.
struct ServedGateway: ~Copyable {
    let directory: TemporaryDirectory
    /// The running gateway; its stdout and stderr are pipes the test reads (or closes).
    let child: ChildProcess
    let key: TestProviderKey
    let tlsDir: String
    let portFile: String

    static func start() async throws -> ServedGateway {
        let directory = try TemporaryDirectory()
        let keyDir = directory.file("keys")
        let made = try await ChildProcess.run(
            "e2ee-gateway",
            ["provider-key", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--out-dir", keyDir]
        )
        try #require(made.status == 0)
        let p8 = try String(
            contentsOfFile: (keyDir as NSString).appendingPathComponent("AuthKey_KEY1234567.p8"),
            encoding: .utf8
        )
        let key = TestProviderKey(privateKey: try P256.Signing.PrivateKey(pemRepresentation: p8))
        let portFile = directory.file("port")
        let tlsDir = directory.file("tls")
        let child = try ChildProcess(
            "e2ee-gateway",
            [
                "serve", "--port", "0", "--port-file", portFile, "--tls-dir", tlsDir, "--topic", testTopic,
                "--provider-key",
                "TEAM123456:KEY1234567:\((keyDir as NSString).appendingPathComponent("AuthKey_KEY1234567.pub.pem"))",
            ],
            stdout: .pipe,
            stderr: .pipe
        )
        return ServedGateway(
            directory: directory,
            child: child,
            key: key,
            tlsDir: tlsDir,
            portFile: portFile
        )
    }

    /// The port the gateway wrote to its port file (waits up to 60 s for it).
    func port() async throws -> Int {
        var port: Int?
        let deadline = ContinuousClock.now + .seconds(60)
        while port == nil, self.child.isRunning, ContinuousClock.now < deadline {
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
        let result = try await ChildProcess.run(
            "e2ee-gateway",
            [
                "provider-key", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--out-dir", outDir,
            ]
        )
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
        #expect(result.stdoutText.contains(#""private_key":"\#(p8)""#))

        let again = try await ChildProcess.run(
            "e2ee-gateway",
            [
                "provider-key", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--out-dir", outDir,
            ]
        )
        #expect(again.status == 73)
        #expect(again.stderr.contains("exists already"))
        #expect(try String(contentsOfFile: p8, encoding: .utf8) == p8Text, "the existing key is untouched")
    }

    @Test("bad arguments exit 64 with a message saying what to fix")
    func badArguments() async throws {
        let directory = try TemporaryDirectory()
        let result = try await ChildProcess.run(
            "e2ee-gateway",
            [
                "serve", "--tls-dir", directory.file("tls"), "--provider-key", "T:K:/nonexistent",
            ]
        )
        #expect(result.status == 64)
        #expect(result.stderr.contains("--topic"))
    }

    @Test("serve: port file, listening line, a push printed as one JSON line on stdout, SIGTERM exits 0")
    func serveDeliversToStdoutAndStopsOnSIGTERM() async throws {
        let served = try await ServedGateway.start()
        let (child, process, key, tlsDir) = (served.child, served.child.process, served.key, served.tlsDir)
        let (stdout, stderr) = (try #require(child.stdoutPipe), try #require(child.stderrPipe))
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
        try await child.wait(timeout: .seconds(60))
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
        let (child, process, key, tlsDir) = (served.child, served.child.process, served.key, served.tlsDir)
        let (stdout, stderr) = (try #require(child.stdoutPipe), try #require(child.stderrPipe))
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
        try await child.wait(timeout: .seconds(60))
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0, "stderr: \(err)")
        #expect(err.contains("delivery sink failed; answering 500"))
    }
}
