import APNsGateway
import Foundation
import Logging
import Testing

@testable import Sender

@Suite("APNs client against the gateway: many pushes on one connection")
struct APNsClientConcurrencyTests {
    @Test("500 pushes with a window of 100: all 200, results in order, 500 delivered, one HTTP/2 connection")
    func fiveHundred() async throws {
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient(window: 100)
            let requests = (0..<500).map { index in
                GatewayHarness.push(token: String(format: "%064x", index + 1))
            }
            let results = await client.send(requests)
            #expect(results.count == 500)
            #expect(results.filter { $0.status == 200 }.count == 500)
            #expect(results.map(\.apnsID) == requests.map(\.apnsID))
            #expect(results.map(\.deviceToken) == requests.map(\.deviceToken))
            let records = gateway.sink.records
            #expect(records.count == 500)
            #expect(Set(records.map(\.apnsID)) == Set(requests.compactMap(\.apnsID)))
            #expect(client.connectionsOpened == (http2: 1, http1: 0))
            #expect(await client.providerTokensIssued == 1)
        }
    }

    @Test("the window bounds pushes in flight: 20 pushes, window 5, 200 ms per answer take at least 4 rounds")
    func windowBounds() async throws {
        try await GatewayHarness.with(faults: FaultInjection(responseDelay: .milliseconds(200))) { gateway in
            let client = try gateway.makeClient(window: 5)
            // Warm up: the first push opens the connection and confirms the token.
            #expect(await client.send(GatewayHarness.push()).status == 200)
            let clock = ContinuousClock()
            let start = clock.now
            let results = await client.send((0..<20).map { _ in GatewayHarness.push() })
            let elapsed = clock.now - start
            #expect(results.allSatisfy { $0.status == 200 })
            #expect(elapsed >= .milliseconds(800), "20 pushes / window 5 * 200 ms; took \(elapsed)")
            #expect(gateway.sink.records.count == 21)
        }
    }

    @Test("concurrent single sends from many tasks share the window and the connection")
    func concurrentSingles() async throws {
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient(window: 8)
            #expect(await client.send(GatewayHarness.push()).status == 200)
            let statuses = await withTaskGroup(of: Int?.self) { group in
                for _ in 0..<64 { group.addTask { await client.send(GatewayHarness.push()).status } }
                var all: [Int?] = []
                for await status in group { all.append(status) }
                return all
            }
            #expect(statuses.count == 64)
            #expect(statuses.allSatisfy { $0 == 200 })
            #expect(gateway.sink.records.count == 65)
            #expect(client.connectionsOpened == (http2: 1, http1: 0))
        }
    }
}

@Suite("APNs client against the gateway: the server changes the rules mid-flight")
struct APNsClientConnectionChangeTests {
    @Test("a lowered stream limit mid-connection is honoured: 80 pushes, all 200, still one connection")
    func streamLimitDrop() async throws {
        let faults = FaultInjection(streamLimitDrop: .init(afterStreams: 20, maxConcurrentStreams: 4))
        try await GatewayHarness.with(faults: faults) { gateway in
            // Pushes queued behind the lowered limit wait inside the per-stream deadline: keep it generous. A stream
            // the client opened before it saw the lowered SETTINGS is refused (REFUSED_STREAM: never processed); how
            // many depends on timing, so the client runs with a retry policy, as a provider would, and every push
            // must still end 200 on the same connection.
            let retry = try RetryPolicy(
                maxAttempts: 5,
                initialDelay: .milliseconds(10),
                maxDelay: .milliseconds(200),
                jitter: 0
            )
            let client = try gateway.makeClient(window: 16, streamTimeout: .seconds(120), retryPolicy: retry)
            let results = await client.send((0..<80).map { _ in GatewayHarness.push() })
            #expect(results.filter { $0.status == 200 }.count == 80)
            #expect(gateway.sink.records.count == 80)
            #expect(client.connectionsOpened == (http2: 1, http1: 0))
        }
    }

    @Test(
        "after GOAWAY: refused streams are retried, others fail as connection errors, a new connection is opened",
        .timeLimit(.minutes(2))
    )
    func goAway() async throws {
        let faults = FaultInjection(goAway: .init(afterStreams: 30))
        try await GatewayHarness.with(faults: faults) { gateway in
            let client = try gateway.makeClient(
                window: 10,
                retryPolicy: try RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(20))
            )
            let results = await client.send((0..<100).map { _ in GatewayHarness.push() })
            let delivered = results.filter { $0.status == 200 }
            let failed = results.filter { $0.localOutcome != nil }
            // Every push has exactly one outcome, every 200 is a record in the sink, no push reads as cancelled.
            #expect(delivered.count + failed.count == 100)
            #expect(gateway.sink.records.count == delivered.count)
            #expect(
                failed.allSatisfy { $0.localOutcome == .connectionError("") },
                "\(failed.map { "\($0.localOutcome.map(\.description) ?? "-")" })"
            )
            #expect(delivered.count >= 30)
            #expect(client.connectionsOpened.http2 >= 2)
            // A later push goes out on a fresh connection. Every connection is sent GOAWAY after 30 streams, so the
            // connection this push lands on may itself be closing when the batch ended on a multiple of 30: allow
            // it to fail as a connection error at most twice before it goes out on a new one.
            var later: [Int?] = []
            for _ in 0..<3 where later.last != 200 {
                later.append(await client.send(GatewayHarness.push()).status)
            }
            #expect(later.last == 200, "\(later)")
        }
    }
}
