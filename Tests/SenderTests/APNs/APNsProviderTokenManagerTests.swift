import Crypto
import Foundation
import Logging
import TestSupport
import Testing

@testable import Sender

@Suite("APNs provider token caching and refresh")
struct APNsProviderTokenManagerTests {
    private func makeManager(
        clock: TestClock,
        refresh: Duration = APNsProviderTokenManager.defaultRefreshInterval,
        logger: Logger = Logger(label: "test")
    ) throws -> APNsProviderTokenManager {
        try APNsProviderTokenManager(
            keyID: APNsTestKeys.keyID,
            teamID: APNsTestKeys.teamID,
            key: APNsSigningKey(privateKey: P256.Signing.PrivateKey()),
            refreshInterval: refresh,
            clock: clock.wallClock,
            logger: logger
        )
    }

    @Test("the token is cached until the refresh interval, then replaced with a new iat")
    func cachesThenRefreshes() async throws {
        let clock = TestClock()
        let manager = try self.makeManager(clock: clock)
        let first = await manager.currentToken()
        #expect(first.issuedAt == Int64(clock.now.timeIntervalSince1970))
        clock.advance(seconds: 49 * 60 + 59)
        let stillFirst = await manager.currentToken()
        #expect(stillFirst == first)
        #expect(await manager.tokensIssued == 1)
        clock.advance(seconds: 1)  // exactly 50 minutes old
        let second = await manager.currentToken()
        #expect(second != first)
        #expect(second.generation == 2)
        #expect(second.issuedAt == first.issuedAt + 50 * 60)
        #expect(await manager.tokensIssued == 2)
    }

    @Test("a configured interval of 20 minutes refreshes at 20 minutes")
    func customInterval() async throws {
        let clock = TestClock()
        let manager = try self.makeManager(clock: clock, refresh: .seconds(20 * 60))
        let first = await manager.currentToken()
        clock.advance(seconds: 20 * 60 - 1)
        #expect(await manager.currentToken() == first)
        clock.advance(seconds: 1)
        #expect(await manager.currentToken() != first)
    }

    @Test(
        "refresh intervals outside 20...60 minutes are rejected",
        arguments: [Duration.seconds(0), .seconds(19 * 60 + 59), .seconds(60 * 60 + 1), .seconds(2 * 3600)]
    )
    func rejectsOutOfRange(interval: Duration) throws {
        let error = try #require(throws: SenderError.self) {
            _ = try self.makeManager(clock: TestClock(), refresh: interval)
        }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains("20...60 minutes"))
        #expect(throws: SenderError(.invalidConfiguration, "")) {
            _ = try APNsClientConfiguration(
                environment: .development,
                keyID: APNsTestKeys.keyID,
                teamID: APNsTestKeys.teamID,
                signingKey: APNsSigningKey(privateKey: P256.Signing.PrivateKey()),
                tokenRefreshInterval: interval
            )
        }
    }

    @Test("the interval limits themselves are accepted", arguments: [Duration.seconds(20 * 60), .seconds(60 * 60)])
    func acceptsLimits(interval: Duration) throws {
        _ = try self.makeManager(clock: TestClock(), refresh: interval)
    }

    @Test("ExpiredProviderToken regenerates once, however many pushes report the same token")
    func regeneratesOnce() async throws {
        let clock = TestClock()
        let manager = try self.makeManager(clock: clock)
        let first = await manager.currentToken()
        clock.advance(seconds: 5 * 60)
        // Twenty pushes in flight with the first token all get ExpiredProviderToken.
        let retried = await withTaskGroup(of: APNsProviderToken?.self) { group in
            for _ in 0..<20 { group.addTask { await manager.tokenRejectedAsExpired(first) } }
            var tokens: [APNsProviderToken?] = []
            for await token in group { tokens.append(token) }
            return tokens
        }
        #expect(retried.count == 20)
        #expect(retried.allSatisfy { $0 != nil && $0 != first })
        #expect(Set(retried.compactMap { $0 }).count == 1)
        #expect(await manager.tokensIssued == 2)
        #expect(await manager.currentToken() == retried[0])
    }

    @Test("a freshly regenerated token called expired again is not replaced within 20 minutes")
    func noChurn() async throws {
        let clock = TestClock()
        let manager = try self.makeManager(clock: clock)
        let first = await manager.currentToken()
        let second = try #require(await manager.tokenRejectedAsExpired(first))
        clock.advance(seconds: 19 * 60)
        #expect(await manager.tokenRejectedAsExpired(second) == nil)
        #expect(await manager.tokensIssued == 2)
        #expect(await manager.currentToken() == second)
        // Twenty minutes after the forced regeneration one more is allowed.
        clock.advance(seconds: 60)
        let third = try #require(await manager.tokenRejectedAsExpired(second))
        #expect(third.generation == 3)
        #expect(await manager.tokensIssued == 3)
    }

    @Test("the logs carry the token fingerprint, never the JWT")
    func logsNoToken() async throws {
        let logs = LogCapture()
        let logger = logs.logger
        let clock = TestClock()
        let manager = try self.makeManager(clock: clock, logger: logger)
        let token = await manager.currentToken()
        let regenerated = try #require(await manager.tokenRejectedAsExpired(token))
        _ = await manager.tokenRejectedAsExpired(regenerated)
        let text = logs.text
        #expect(logs.lines.count == 3)
        #expect(text.contains(token.fingerprint))
        for jwt in [token.jwt, regenerated.jwt] {
            for part in jwt.split(separator: ".") {
                #expect(!text.contains(String(part)))
            }
        }
    }
}
