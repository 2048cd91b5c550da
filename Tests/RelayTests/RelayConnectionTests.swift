import AsyncHTTPClient
import ConnectionGuard
import Foundation
import Logging
import NIOCore
import NIOSSL
import TestSupport
import Testing

@testable import Relay

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The relay's socket deadlines, connection cap and body limit (docs/RELAY.md "Connections"): connections that send
/// nothing or trickle bytes never lock a new client out, and are closed.
@Suite("e2ee-relay connections: deadlines, cap, early 413", .serialized)
struct RelayConnectionTests {
    @Test(
        "with 160 file descriptors, 150 silent connections and 3 slowloris clients: a new client is served, all are closed"
    )
    func idleAndSlowClients() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await GatewayFixture.with { gateway in
            let relay = try await RelayProcess(
                folder: folder,
                name: "relay",
                database: folder.file("relay.sqlite"),
                apnsURL: gateway.baseURL,
                apnsCA: gateway.server.caCertificatePath,
                keyFile: try gateway.writeKeyFile(),
                extra: ["--log-level", "info"],
                // Long enough for a TLS handshake on two loaded cores (a sanitizer in CI), short enough to watch.
                deadlines: ["--tls-handshake-timeout", "10", "--request-head-timeout", "3"],
                // The default cap is then 96: below the limit, so that accepting never runs out of descriptors.
                limitingFileDescriptors: 160
            )
            defer { relay.stop() }
            // More silent connections than the process has descriptors for, then three slowloris clients: a
            // ClientHello, an HTTP/2 preface and an HTTP/1.1 head, each trickled one byte at a time.
            let silent = try (0..<150).map { _ in try RawConnection(port: relay.port) }
            let hello = try RawConnection(port: relay.port)
            let helloTask = Task {
                for byte: UInt8 in [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x00] {
                    guard hello.send([byte]) else { return }
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
            let preface = try await TLSTrickle.start(
                port: relay.port,
                caPath: relay.caPath,
                alpn: ["h2"],
                bytes: Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
            )
            defer { preface.close() }
            let head = try await TLSTrickle.start(
                port: relay.port,
                caPath: relay.caPath,
                alpn: ["http/1.1"],
                bytes: Array("GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa\r\n\r\n".utf8)
            )
            defer { head.close() }

            // A new client is served: at the cap, the connections waiting longest are closed for it.
            let metrics = try await withClient(relay.baseURL, ca: relay.caPath, timeout: .seconds(20)) { client in
                #expect(await client.isHealthy(), "\(relay.stderr.suffix(2000))")
                var open = 0
                for connection in silent where !connection.closedByServer(within: 20_000) { open += 1 }
                #expect(open == 0, "\(open) of 150 silent connections are still open")
                #expect(hello.closedByServer(within: 20_000), "the ClientHello trickle is still open")
                #expect(await preface.closedByServer(within: .seconds(20)), "the HTTP/2 preface trickle is still open")
                #expect(await head.closedByServer(within: .seconds(20)), "the HTTP/1.1 head trickle is still open")
                return try await client.metricsText()
            }
            helloTask.cancel()
            func closed(_ reason: String) -> Double {
                RelayFaultTests.gauge(metrics, #"relay_connections_closed_total{reason="\#(reason)"}"#) ?? 0
            }
            #expect(closed("evicted") > 0, "\(metrics)")
            #expect(closed("handshake-timeout") > 0, "\(metrics)")
            #expect(closed("evicted") + closed("handshake-timeout") + closed("request-head-timeout") >= 153)
            relay.signal(SIGTERM)
            #expect(try await relay.waitForExit() == 0, "\(relay.stderr.suffix(2000))")
        }
    }

    @Test("a submit declaring a body over the limit is answered 413 at once, before its body is sent")
    func declaredLengthOverLimit() async throws {
        try await ServiceFixture.with { fixture in
            // The rest of the refused body is not awaited either: the request's deadline resets its stream.
            let relay = try await RelayEndToEndTests.RunningRelay.start(
                fixture: fixture,
                clients: [:],
                connections: ConnectionLimits(requestTimeout: .seconds(2))
            )
            try await withCleanup(relay, { await $0.stopRecordingErrors() }) { relay in
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.trustRoots = .file(relay.caPath)
                let http = HTTPClient(
                    eventLoopGroup: HTTPClient.defaultEventLoopGroup,
                    configuration: HTTPClient.Configuration(tlsConfiguration: tls)
                )
                try await withCleanup(http, { try? await $0.shutdown() }) { http in
                    var request = HTTPClientRequest(url: "https://127.0.0.1:\(relay.port)/v1/users/bob/pushes")
                    request.method = .POST
                    request.headers.add(name: "Idempotency-Key", value: "k")
                    // 1 KiB of a declared 10 MB, then nothing: the answer must not wait for the rest.
                    let (chunks, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
                    continuation.yield(ByteBuffer(repeating: 0x7b, count: 1024))
                    request.body = .stream(chunks, length: .known(Int64(10_000_000)))
                    let response = try await http.execute(request, timeout: .seconds(30))
                    #expect(response.status.code == 413)
                    let body = try await response.body.collect(upTo: 1 << 16)
                    #expect(String(buffer: body).contains(#""error":"body-too-large""#))
                    continuation.finish()
                }
            }
        }
    }
}
