import APNsGateway
import Crypto
import Foundation
import Logging
import Testing

@testable import Sender

/// The HTTP/2 transport against the real gateway (TLS + HTTP/2 on loopback) when things go wrong: the connection
/// drops mid-stream, nothing listens, the certificate is not trusted, the sender gives up.
@Suite("APNs client against the gateway: transport failures")
struct APNsClientTransportTests {
    @Test(
        "connection lost mid-stream: pushes in flight end as connection errors and are not retried",
        .timeLimit(.minutes(3))
    )
    func connectionLostMidStream() async throws {
        // Every answer is held 30 s after the gateway stored the push. The test shuts the gateway down as soon as it
        // has stored the five, so their answers are lost however slow the machine. (Before, it slept a fixed 200 ms
        // against an 800 ms delay, and a loaded CI run got all five answered first; then a 5 s delay, and under
        // ThreadSanitizer beside another build the test's 10 ms polling task was starved past it, and all five
        // were answered before the shutdown.)
        try await GatewayHarness.with(faults: FaultInjection(responseDelay: .seconds(30))) { gateway in
            // A policy that would retry 5xx: a push that may have reached APNs must still not be sent twice.
            let policy = try RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(1))
            let client = try gateway.makeClient(window: 10, retryPolicy: policy)
            // Until a first push confirms the provider token, a connection carries one stream at a time (APNs).
            #expect(await client.send(GatewayHarness.push()).status == 200)

            let batch = Task { await client.send((0..<5).map { _ in GatewayHarness.push() }) }
            // Mid-stream: the gateway has taken the five pushes (stored, answers held back).
            let deadline = ContinuousClock.now + .seconds(60)
            while gateway.sink.records.count < 6, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(client.connectionsOpened.http2 == 1)
            try await gateway.server.shutdown()
            let results = await batch.value
            #expect(results.count == 5)
            #expect(
                results.allSatisfy { $0.localOutcome == .connectionError("") },
                "\(results.map { $0.localOutcome?.description ?? "status \($0.status ?? 0)" })"
            )
            #expect(results.allSatisfy { $0.attempts == 1 })
            // The gateway stored the pushes whose answers were lost (that is why they are not retried): none twice.
            let stored = gateway.sink.records.map(\.apnsID)
            #expect(stored.count == 6)
            #expect(Set(stored).count == stored.count, "a push was delivered twice: \(stored)")

            // With the gateway gone, the next push fails as a connection error, once; it does not hang. (Whether the
            // closed port answers "refused" or resets a connection its listener had queued is the kernel's timing,
            // so the message is not asserted.)
            let later = await client.send(GatewayHarness.push())
            #expect(later.localOutcome == .connectionError(""), "\(later)")
            #expect(later.attempts == 1)
        }
    }

    @Test("nothing listening: every push of a batch is a connection error, no connection is counted")
    func nothingListening() async throws {
        let client = try Self.client(baseURL: "https://127.0.0.1:9", caPath: nil)
        let results = await client.send((0..<20).map { GatewayHarness.push(token: String(format: "%064x", $0 + 1)) })
        await client.shutdown()
        #expect(results.count == 20)
        #expect(results.allSatisfy { $0.localOutcome == .connectionError("") && $0.attempts == 1 })
        #expect(results.map(\.deviceToken) == (0..<20).map { String(format: "%064x", $0 + 1) })
        #expect(client.connectionsOpened == (http2: 0, http1: 0))
    }

    @Test(
        "a gateway whose CA is not trusted: untrustedCertificate at once, said without a BoringSSL dump, nothing sent"
    )
    func untrustedCertificate() async throws {
        try await GatewayHarness.with { gateway in
            // The system roots do not include the gateway's fresh CA.
            let client = try Self.client(baseURL: "https://127.0.0.1:\(gateway.port)", caPath: nil)
            let result = await client.send(GatewayHarness.push())
            await client.shutdown()
            #expect(result.localOutcome == .untrustedCertificate(""))
            #expect(result.attempts == 1)
            let message = result.localOutcome?.message ?? ""
            #expect(message.contains("does not verify against the trusted certificates"), "\(message)")
            // No error type dumps, no BoringSSL source paths.
            #expect(!message.contains("/") && !message.contains("Error"), "\(message)")
            #expect(gateway.sink.records.isEmpty)
        }
    }

    @Test(
        "a cancelled send resets its stream and reports cancelled without waiting for the timeout",
        .timeLimit(.minutes(1))
    )
    func cancelledSend() async throws {
        try await GatewayHarness.with(faults: FaultInjection(silentRate: 1)) { gateway in
            let client = try gateway.makeClient(streamTimeout: .seconds(300))
            let send = Task { await client.send(GatewayHarness.push()) }
            try await Task.sleep(for: .milliseconds(300))
            send.cancel()
            let result = await send.value
            #expect(result.localOutcome == .cancelled)
            #expect(result.status == nil)
            #expect(gateway.sink.records.isEmpty)
        }
    }

    @Test("shutdown with a stream in flight: it and the queued pushes end as clientShutdown", .timeLimit(.minutes(1)))
    func shutdownWhileSending() async throws {
        try await GatewayHarness.with(faults: FaultInjection(silentRate: 1)) { gateway in
            let client = try gateway.makeClient(streamTimeout: .seconds(300))
            let batch = Task { await client.send((0..<3).map { _ in GatewayHarness.push() }) }
            // Shut down once the connection is up and the first push is on it (not while TLS is still starting).
            while client.connectionsOpened.http2 == 0 { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(100))
            await client.shutdown()
            let results = await batch.value
            #expect(results.map(\.localOutcome) == Array(repeating: .clientShutdown, count: 3))
            #expect(await client.send(GatewayHarness.push()).localOutcome == .clientShutdown)
        }
    }

    static func client(baseURL: String, caPath: String?) throws -> APNsClient {
        let configuration = try APNsClientConfiguration(
            environment: .custom(baseURL: baseURL, trustedCAPEMPath: caPath),
            keyID: APNsTestKeys.keyID,
            teamID: APNsTestKeys.teamID,
            signingKey: APNsSigningKey(privateKey: P256.Signing.PrivateKey()),
            connectTimeout: .seconds(5),
            retryPolicy: try RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(1))
        )
        return APNsClient(configuration: configuration, logger: Logger(label: "test"))
    }
}
