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
