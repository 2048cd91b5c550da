import AsyncHTTPClient
import Foundation
import LoopbackPKI
import NIOCore
import TestSupport
import Testing

@testable import Relay

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What an operator does with a running `e2ee-relay serve` (docs/RELAY.md "Operating"): SIGHUP for a new certificate,
/// a metrics listener of its own, the start-up line; and a TLS folder that belongs to another server.
@Suite("e2ee-relay operations: SIGHUP, metrics listener, start-up line, TLS folders", .serialized)
struct RelayOperationsTests {
    /// Writes a loopback PKI's server chain and key (0600) to `name`.pem / `name`.key in `folder`.
    static func write(_ pki: LoopbackCertificates, _ folder: TemporaryFolder, _ name: String) throws {
        try Data((pki.serverCertificatePEM + "\n" + pki.caCertificatePEM).utf8)
            .write(to: URL(fileURLWithPath: folder.file("\(name).pem")), options: .atomic)
        _ = FileManager.default.createFile(
            atPath: folder.file("\(name).key.tmp"),
            contents: Data(pki.serverKeyPEM.utf8),
            attributes: [.posixPermissions: 0o600]
        )
        _ = try? FileManager.default.removeItem(atPath: folder.file("\(name).key"))
        try FileManager.default.moveItem(atPath: folder.file("\(name).key.tmp"), toPath: folder.file("\(name).key"))
    }

    @Test("SIGHUP serves a new certificate to new connections, open ones go on; metrics on their own listener")
    func reloadAndMetricsListener() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let first = try LoopbackCertificates(caCommonName: "first CA")
        let second = try LoopbackCertificates(caCommonName: "second CA")
        try first.writeCA(to: folder.file("first-ca.pem"))
        try second.writeCA(to: folder.file("second-ca.pem"))
        try Self.write(first, folder, "server")
        try await GatewayFixture.with { gateway in
            let portFile = folder.file("relay.port")
            let child = try ChildProcess(
                "e2ee-relay",
                [
                    "serve", "--database", folder.file("relay.sqlite"), "--port", "0", "--port-file", portFile,
                    "--tls-cert", folder.file("server.pem"), "--tls-key", folder.file("server.key"),
                    "--apns-url", gateway.baseURL, "--apns-ca", gateway.server.caCertificatePath,
                    "--apns-key-file", try gateway.writeKeyFile(), "--apns-topic", GatewayFixture.topic,
                    "--metrics-port", "0",
                ],
                stdout: .discard,
                stderr: .file(folder.file("relay.stderr")),
                // Everything but the flags the test varies comes from the environment.
                environment: [
                    "E2EE_RELAY_APNS_KEY_ID": GatewayFixture.keyID, "E2EE_RELAY_APNS_TEAM_ID": GatewayFixture.teamID,
                ]
            )
            defer { child.signal(SIGKILL) }
            var port: Int?
            var metricsPort: Int?
            try await waitUntil(tries: 1200, every: .milliseconds(50)) {
                port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap {
                    Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
                }
                // "… port=N [Relay] e2ee-relay metrics listening"
                if let line = child.standardError.split(separator: "\n").first(where: {
                    $0.contains("metrics listening")
                }),
                    let range = line.range(of: "port=")
                {
                    metricsPort = Int(line[range.upperBound...].prefix { $0.isNumber })
                }
                return (port != nil && metricsPort != nil) || !child.isRunning
            }
            let url = "https://127.0.0.1:\(try #require(port, "\(child.standardError)"))"
            let stderr = child.standardError
            #expect(stderr.contains("e2ee-relay "), "\(stderr)")
            #expect(stderr.contains("starting: store SQLite \(folder.file("relay.sqlite"))"), "\(stderr)")
            #expect(stderr.contains("topics \(GatewayFixture.topic)"), "\(stderr)")

            // Metrics on their own listener (plain HTTP), with build and process figures; not on the API any more.
            let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
            try await withCleanup(http, { try? await $0.shutdown() }) { http in
                let metricsURL = "http://127.0.0.1:\(try #require(metricsPort, "\(stderr)"))/metrics"
                let response = try await http.execute(HTTPClientRequest(url: metricsURL), timeout: .seconds(60))
                #expect(response.status.code == 200)
                let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
                #expect(text.contains("relay_build_info{version=\""), "\(text)")
                for name in ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"] {
                    #expect(text.contains("\n\(name) ") || text.hasPrefix("\(name) "), "\(name) missing")
                }
                #expect(text.contains("relay_connections_open"))
            }

            try await withClient(url, ca: folder.file("first-ca.pem")) { old in
                #expect(await old.isHealthy())
                // The certificate is renewed (by the second CA here) and the relay told with SIGHUP.
                try Self.write(second, folder, "server")
                child.signal(SIGHUP)
                try await waitUntil(tries: 600, every: .milliseconds(50)) {
                    child.standardError.contains("TLS certificate reloaded")
                }
                // A new connection gets the new certificate: trusted with the second CA, refused with the first.
                try await withClient(url, ca: folder.file("second-ca.pem")) { new in #expect(await new.isHealthy()) }
                try await withClient(url, ca: folder.file("first-ca.pem")) { stale in
                    do {
                        _ = try await stale.metricsText()
                        Issue.record("a new connection was served the old certificate")
                    } catch let error as RelayError {
                        #expect(error.code == .untrustedCertificate, "\(error)")
                    }
                }
                // The connection opened before the reload was not dropped: it still serves requests.
                #expect(await old.isHealthy())
            }
            // /metrics is not on the API when it has its own listener.
            try await withClient(url, ca: folder.file("second-ca.pem")) { client in
                do {
                    _ = try await client.metricsText()
                    Issue.record("the API still serves /metrics")
                } catch let error as RelayError {
                    #expect(error.code == .notFound, "\(error)")
                }
            }
            child.signal(SIGTERM)
            #expect(try await child.wait(timeout: .seconds(60)) == 0, "\(child.standardError.suffix(2000))")
        }
    }

    @Test("a TLS folder holding another server's ca.pem is refused at start (exit 1); the file is left as it was")
    func foreignCAIsNotOverwritten() async throws {
        try await GatewayFixture.with { gateway in
            let before = try Data(contentsOf: URL(fileURLWithPath: gateway.server.caCertificatePath))
            let tlsDir = (gateway.server.caCertificatePath as NSString).deletingLastPathComponent
            let result = try await ChildProcess.run(
                "e2ee-relay",
                [
                    "serve", "--database", gateway.folder.file("relay.sqlite"), "--port", "0",
                    "--self-signed-tls-dir", tlsDir, "--apns-url", gateway.baseURL, "--apns-key-file",
                    try gateway.writeKeyFile(), "--apns-key-id", GatewayFixture.keyID, "--apns-team-id",
                    GatewayFixture.teamID, "--apns-topic", GatewayFixture.topic,
                ],
                stdout: .discard
            )
            #expect(result.status == 1)
            #expect(result.stderr.contains("is not overwritten"), "\(result.stderr)")
            #expect(result.stderr.contains("APNsGateway local CA"), "\(result.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: gateway.server.caCertificatePath)) == before)
        }
    }
}
