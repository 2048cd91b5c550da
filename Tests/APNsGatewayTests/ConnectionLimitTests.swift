import APNsGateway
import ConnectionGuard
import Foundation
import NIOCore
import TestSupport
import Testing

/// The gateway's socket deadlines and connection cap (docs/GATEWAY.md "Connections"): idle and slow clients are
/// closed, and they never keep a new client out.
@Suite("Gateway connections: deadlines and the cap")
struct ConnectionLimitTests {
    @Test("40 silent connections and 2 slowloris clients at a cap of 20: a new client is served, every one is closed")
    func idleAndSlowClients() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let limits: (inout GatewayConfiguration) -> Void = {
            // Long enough for a TLS handshake on two loaded cores (a sanitizer in CI), short enough to watch.
            $0.connections = ConnectionLimits(
                handshakeTimeout: .seconds(10),
                requestHeadTimeout: .seconds(2),
                idleTimeout: .seconds(3600),
                requestTimeout: .seconds(30),
                maximumConnections: 20
            )
        }
        try await withGateway(directory: directory.path, key: key, configure: limits) { server, port in
            // Connections that never send a byte; then a ClientHello trickled one byte at a time (never complete),
            // and a finished handshake followed by an HTTP/2 preface trickled one byte at a time.
            let silent = try (0..<40).map { _ in try RawConnection(port: port) }
            let hello = try RawConnection(port: port)
            let helloBytes: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]
            let helloTask = Task {
                for byte in helloBytes {
                    guard hello.send([byte]) else { return }
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
            let preface = try await TLSTrickle.start(
                port: port,
                caPath: server.caCertificatePath,
                alpn: ["h2"],
                bytes: Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
            )
            defer { preface.close() }

            // A real client is served at once: at the cap, the connection waiting longest is closed for it.
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            let response = try await client.send(
                headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
                body: sampleBody
            )
            #expect(response.status == 200)
            await client.close()

            // Every silent or slow connection is closed: evicted for the new client, or at its deadline.
            var open = 0
            for connection in silent where !connection.closedByServer(within: 20_000) { open += 1 }
            #expect(open == 0, "\(open) of 40 silent connections are still open")
            #expect(hello.closedByServer(within: 20_000), "the ClientHello trickle is still open")
            #expect(await preface.closedByServer(within: .seconds(20)), "the HTTP/2 preface trickle is still open")
            helloTask.cancel()

            let closed = server.connections.closedConnections
            let evicted: Int = closed[.evicted] ?? 0
            let handshake: Int = closed[.handshakeTimeout] ?? 0
            let head: Int = closed[.requestHeadTimeout] ?? 0
            #expect(evicted > 0, "\(closed)")
            #expect(handshake > 0, "\(closed)")
            #expect(evicted + handshake + head >= 42, "\(closed)")
            // The tracker hears of a close when the channel's close future runs, a moment after the peer saw it.
            var stillOpen = server.connections.openConnections
            for _ in 0..<50 where stillOpen > 1 {
                try await Task.sleep(for: .milliseconds(100))
                stillOpen = server.connections.openConnections
            }
            #expect(stillOpen <= 1, "\(stillOpen) connections still tracked as open 5 s after every one was closed")
        }
    }
}
