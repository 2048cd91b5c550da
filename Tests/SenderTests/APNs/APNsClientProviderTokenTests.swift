import APNsGateway
import Foundation
import Logging
import TestSupport
import Testing

@testable import Sender

@Suite("APNs client against the gateway: provider token expiry")
struct APNsClientProviderTokenTests {
    @Test("ExpiredProviderToken: one new token for a whole batch, each push retried once, then delivered")
    func regeneratesOnceAndDelivers() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let gatewayClock = TestClock(start)
        let clientClock = TestClock(start)
        try await GatewayHarness.with(gatewayClock: gatewayClock) { gateway in
            let client = try gateway.makeClient(clock: clientClock)
            let first = await client.send(GatewayHarness.push())
            #expect(first.status == 200)
            #expect(await client.providerTokensIssued == 1)

            // The client's clock says 40 minutes (its token is not due for refresh), the gateway's says 65:
            // APNs calls the token expired.
            clientClock.advance(seconds: 40 * 60)
            gatewayClock.advance(seconds: 65 * 60)
            let batch = (0..<10).map { _ in GatewayHarness.push() }
            let results = await client.send(batch)
            #expect(results.map(\.status) == Array(repeating: 200, count: 10))
            #expect(results.map(\.apnsID) == batch.map(\.apnsID))
            #expect(results.allSatisfy { $0.attempts == 2 })
            #expect(await client.providerTokensIssued == 2)
            #expect(gateway.sink.records.count == 11)

            // Later pushes use the regenerated token without another regeneration.
            let later = await client.send(GatewayHarness.push())
            #expect(later.status == 200)
            #expect(later.attempts == 1)
            #expect(await client.providerTokensIssued == 2)
        }
    }

    @Test("a regenerated token that is also called expired is not replaced again: the 403 is the result")
    func noSecondRegeneration() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let gatewayClock = TestClock(start.addingTimeInterval(3 * 3600))
        let clientClock = TestClock(start)
        try await GatewayHarness.with(gatewayClock: gatewayClock) { gateway in
            let client = try gateway.makeClient(
                retryPolicy: try RetryPolicy(maxAttempts: 3, initialDelay: .zero),
                clock: clientClock
            )
            // Every token this client signs is three hours old by the gateway's clock.
            let first = await client.send(GatewayHarness.push())
            #expect(first.status == 403)
            #expect(first.reason == .expiredProviderToken)
            #expect(first.attempts == 2)
            #expect(await client.providerTokensIssued == 2)
            clientClock.advance(seconds: 60)
            let second = await client.send(GatewayHarness.push())
            #expect(second.status == 403)
            #expect(second.reason == .expiredProviderToken)
            #expect(second.attempts == 1)
            #expect(await client.providerTokensIssued == 2)
            #expect(gateway.sink.records.isEmpty)
        }
    }

    @Test("the token is refreshed on schedule and the gateway accepts the refresh after 50 minutes")
    func scheduledRefresh() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let gatewayClock = TestClock(start)
        let clientClock = TestClock(start)
        try await GatewayHarness.with(gatewayClock: gatewayClock) { gateway in
            let client = try gateway.makeClient(clock: clientClock)
            #expect(await client.send(GatewayHarness.push()).status == 200)
            for minutes in [10, 20, 19] {
                clientClock.advance(seconds: Double(minutes) * 60)
                gatewayClock.advance(seconds: Double(minutes) * 60)
                #expect(await client.send(GatewayHarness.push()).status == 200)
            }
            #expect(await client.providerTokensIssued == 1)
            clientClock.advance(seconds: 60)  // 50 minutes: refresh
            gatewayClock.advance(seconds: 60)
            let refreshed = await client.send(GatewayHarness.push())
            #expect(refreshed.status == 200)
            #expect(refreshed.attempts == 1)
            #expect(await client.providerTokensIssued == 2)
            #expect(gateway.sink.records.count == 5)
        }
    }
}
