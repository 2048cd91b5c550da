import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdHTTP2
import HummingbirdTLS
import Locking
import Logging
import LoopbackPKI
import NIOCore
import NIOSSL
import RelayClient
import ServiceLifecycle
import TestSupport
import Testing

/// `RelayClient` over its own HTTP/2 transport, against a small HTTPS server that answers what the relay never would:
/// an answer larger than HTTP/2's default windows, one larger than the client reads and its stream's window, a refusal with `Retry-After`,
/// and a server without HTTP/2.
@Suite("RelayClient's HTTP/2 transport against a server that is not the relay")
struct RelayClientTransportTests {
    /// What the server saw of the one submit it was sent.
    struct SeenSubmit: Sendable, Equatable {
        var method: String
        var authorization: String?
        var idempotencyKey: String?
        var contentType: String?
        var body: [UInt8]
    }

    /// Each request's bound. Nothing here is about time: the bound only has to outlast a loaded machine (the whole
    /// suite in parallel on 2 cores starves this process's server for seconds), so that a stalled stream fails the
    /// test instead of hanging it.
    static let timeout = Duration.seconds(60)

    /// 300,000 bytes: more than a stream's and the connection's initial 65,535-byte windows several times over.
    static let bigAnswer = String(repeating: "0123456789abcdefghijklmnopqrstuvwxyz\n", count: 8_109).prefix(300_000)

    /// Runs an HTTPS server (`http2`: HTTP/2 with ALPN, else HTTP/1.1 alone) with the routes below, and `body` with
    /// its port and the CA file that trusts it.
    static func withServer(
        http2: Bool,
        seen: PThreadMutex<[SeenSubmit]> = PThreadMutex([]),
        _ body: (_ port: Int, _ caPath: String) async throws -> Void
    ) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let certificates = try LoopbackCertificates(caCommonName: "transport test CA")
        try certificates.writeCA(to: folder.file("ca.pem"))
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificates.chain.map { .certificate($0) },
            privateKey: .privateKey(certificates.serverKey)
        )
        if !http2 { tls.applicationProtocols = [] }

        let router = Router()
        router.get("/big/metrics") { _, _ in String(Self.bigAnswer) }
        router.get("/huge/metrics") { _, _ in String(repeating: "x", count: 5 << 20) }
        router.post("/v1/users/bob/pushes") { request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 1 << 16)
            seen.withLock {
                $0.append(
                    SeenSubmit(
                        method: request.method.rawValue,
                        authorization: request.headers[.authorization],
                        idempotencyKey: request.headers[HTTPField.Name("Idempotency-Key")!],
                        contentType: request.headers[.contentType],
                        body: Array(buffer: bytes)
                    )
                )
            }
            return Response(
                status: .tooManyRequests,
                headers: [.retryAfter: "7", .contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"error":"rate-limited","message":"slow down"}"#))
            )
        }
        let port = PThreadMutex<Int?>(nil)
        let app = Application(
            router: router,
            server: http2 ? try .http2Upgrade(tlsConfiguration: tls) : try .tls(.http1(), tlsConfiguration: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } },
            logger: Logger(label: "transport-test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let group = ServiceGroup(
            configuration: .init(
                services: [app],
                logger: Logger(label: "transport-test", factory: { _ in SwiftLogNoOpLogHandler() })
            )
        )
        let running = Task { try await group.run() }
        defer { running.cancel() }
        var listening: Int?
        for _ in 0..<500 where listening == nil {
            listening = port.withLock { $0 }
            if listening == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let found = try #require(listening, "the test server did not start")
        do {
            try await body(found, folder.file("ca.pem"))
        } catch {
            await group.triggerGracefulShutdown()
            throw error
        }
        await group.triggerGracefulShutdown()
        try await running.value
    }

    @Test("an answer several times HTTP/2's default windows arrives whole, twice on one client, under the URL's path")
    func largeAnswer() async throws {
        try await Self.withServer(http2: true) { port, ca in
            let client = try RelayClient(
                baseURL: "https://127.0.0.1:\(port)/big",
                trustedCAPEMPath: ca,
                timeout: Self.timeout
            )
            let first = try await client.metricsText()
            let second = try await client.metricsText()
            await client.shutdown()
            #expect(first.utf8.count == 300_000)
            #expect(first == String(Self.bigAnswer))
            #expect(second == first)
        }
    }

    @Test(
        "an answer larger than 1 MiB (5 MiB, past the stream's window) is refused as unexpected at once, not cut short"
    )
    func oversizedAnswer() async throws {
        try await Self.withServer(http2: true) { port, ca in
            let client = try RelayClient(
                baseURL: "https://127.0.0.1:\(port)/huge",
                trustedCAPEMPath: ca,
                timeout: Self.timeout
            )
            let error = await #expect(throws: RelayError.self) { try await client.metricsText() }
            await client.shutdown()
            #expect(error?.code == .unexpectedResponse)
            #expect(error?.message == "the relay's answer is larger than 1048576 bytes")
        }
    }

    @Test("a submit's headers and body arrive as sent; a refusal keeps its code, message and Retry-After")
    func refusalWithRetryAfter() async throws {
        let seen = PThreadMutex<[SeenSubmit]>([])
        try await Self.withServer(http2: true, seen: seen) { port, ca in
            let client = try RelayClient(
                baseURL: "https://127.0.0.1:\(port)",
                trustedCAPEMPath: ca,
                timeout: Self.timeout
            )
            let body = Array(#"{"pushes":[]}"#.utf8)
            let error = await #expect(throws: RelayError.self) {
                try await client.submit(
                    userID: "bob",
                    body: body,
                    authorization: "Bearer 00ff",
                    idempotencyKey: "key-1",
                    attempts: 3
                )
            }
            await client.shutdown()
            #expect(error?.code == .rateLimited)
            #expect(error?.message == "slow down")
            #expect(error?.retryAfterSeconds == 7)
            // A refusal is an answer: it is not retried, whatever `attempts` allows.
            #expect(
                seen.withLock { $0 } == [
                    SeenSubmit(
                        method: "POST",
                        authorization: "Bearer 00ff",
                        idempotencyKey: "key-1",
                        contentType: "application/json",
                        body: body
                    )
                ]
            )
        }
    }

    @Test("a server that does not negotiate HTTP/2 is refused, saying what to check; nothing is sent")
    func noHTTP2() async throws {
        let seen = PThreadMutex<[SeenSubmit]>([])
        try await Self.withServer(http2: false, seen: seen) { port, ca in
            let client = try RelayClient(
                baseURL: "https://127.0.0.1:\(port)",
                trustedCAPEMPath: ca,
                timeout: Self.timeout
            )
            let error = await #expect(throws: RelayError.self) {
                try await client.submit(userID: "bob", body: [], authorization: nil, idempotencyKey: "key-2")
            }
            #expect(await client.isHealthy() == false)
            await client.shutdown()
            #expect(error?.code == .transport)
            #expect(
                error?.message
                    == "the relay at https://127.0.0.1:\(port) could not be reached: the server negotiated no protocol "
                    + "instead of HTTP/2 (ALPN h2); check that the URL points at an e2ee-relay"
            )
            #expect(seen.withLock { $0 }.isEmpty)
        }
    }
}
