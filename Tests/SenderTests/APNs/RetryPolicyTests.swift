import Foundation
import Testing

@testable import Sender

@Suite("APNs retry policy")
struct RetryPolicyTests {
    @Test("base delays grow exponentially up to the cap")
    func schedule() throws {
        let policy = try RetryPolicy(
            maxAttempts: 8,
            initialDelay: .milliseconds(100),
            multiplier: 2,
            maxDelay: .milliseconds(1000),
            jitter: 0
        )
        let delays = (1...7).map { policy.baseDelay(beforeRetry: $0) }
        #expect(delays == [100, 200, 400, 800, 1000, 1000, 1000].map { Duration.milliseconds($0) })
        #expect((1...7).map { policy.delay(beforeRetry: $0, random: 0.99) } == delays)
    }

    @Test("jitter only lengthens a delay, by at most the jitter fraction, and never beyond the cap")
    func jitterBounds() throws {
        let policy = try RetryPolicy(
            maxAttempts: 5,
            initialDelay: .milliseconds(100),
            multiplier: 3,
            maxDelay: .milliseconds(500),
            jitter: 0.5
        )
        #expect(policy.delay(beforeRetry: 1, random: 0) == .milliseconds(100))
        #expect(policy.delay(beforeRetry: 1, random: 0.5) == .milliseconds(125))
        #expect(policy.delay(beforeRetry: 2, random: 0.5) == .milliseconds(375))
        // 900 ms base is capped at 500 ms; jitter cannot push it over.
        #expect(policy.delay(beforeRetry: 3, random: 0.99) == .milliseconds(500))
        for _ in 0..<1000 {
            let delay = policy.delay(beforeRetry: 2, random: Double.random(in: 0..<1))
            #expect(delay >= .milliseconds(300) && delay <= .milliseconds(450))
        }
    }

    @Test("an absurd retry number saturates at the cap instead of trapping")
    func saturates() throws {
        let policy = try RetryPolicy(maxAttempts: 2, initialDelay: .seconds(1), multiplier: 10, maxDelay: .seconds(60))
        #expect(policy.baseDelay(beforeRetry: 10_000) == .seconds(60))
    }

    @Test("only 429 and 5xx are retryable", arguments: [200, 400, 403, 404, 405, 410, 413, 429, 500, 502, 503, 599])
    func retryable(status: Int) {
        #expect(RetryPolicy.isRetryable(status: status) == (status == 429 || status >= 500))
    }

    @Test("invalid values are rejected")
    func validation() {
        #expect(throws: SenderError(.invalidConfiguration, "")) { try RetryPolicy(maxAttempts: 0) }
        #expect(throws: SenderError(.invalidConfiguration, "")) { try RetryPolicy(multiplier: 0.5) }
        #expect(throws: SenderError(.invalidConfiguration, "")) { try RetryPolicy(jitter: 1.5) }
        #expect(throws: SenderError(.invalidConfiguration, "")) {
            try RetryPolicy(initialDelay: .seconds(5), maxDelay: .seconds(1))
        }
        #expect(throws: SenderError(.invalidConfiguration, "")) { try RetryPolicy(initialDelay: .seconds(-1)) }
    }

    @Test("the default policy is 3 attempts from 1 s doubling, capped at 30 s, 20% jitter")
    func defaults() {
        let policy = RetryPolicy.default
        #expect(policy.maxAttempts == 3)
        #expect(policy.baseDelay(beforeRetry: 1) == .seconds(1))
        #expect(policy.baseDelay(beforeRetry: 2) == .seconds(2))
        #expect(policy.maxDelay == .seconds(30))
        #expect(policy.jitter == 0.2)
        #expect(RetryPolicy.never.maxAttempts == 1)
    }

    @Test("the default sleep really waits")
    func defaultSleepWaits() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        try await RetryPolicy.default.sleep(.milliseconds(150))
        #expect(clock.now - start >= .milliseconds(150))
    }
}
