import APNsGateway
import Foundation
import Logging
import Testing

@testable import Sender

@Suite("APNs client against the gateway: retries and timeouts")
struct APNsClientRetryTests {
    static let retryable: [(String, FaultInjection, Int, APNsReason)] = [
        ("429", FaultInjection(tooManyRequestsRate: 1), 429, .tooManyRequests),
        ("500", FaultInjection(internalServerErrorRate: 1), 500, .internalServerError),
        ("503", FaultInjection(serviceUnavailableRate: 1), 503, .serviceUnavailable),
    ]

    @Test(
        "429 and 5xx are retried after the configured delays, really slept",
        arguments: 0..<retryable.count
    )
    func retriedWithRealDelays(index: Int) async throws {
        let (_, faults, status, reason) = Self.retryable[index]
        try await GatewayHarness.with(faults: faults) { gateway in
            // Delays 150 ms then 300 ms; jitter only lengthens them. The default sleep is used.
            let policy = try RetryPolicy(
                maxAttempts: 3,
                initialDelay: .milliseconds(150),
                multiplier: 2,
                maxDelay: .seconds(5),
                jitter: 0.1
            )
            let client = try gateway.makeClient(retryPolicy: policy)
            let clock = ContinuousClock()
            let start = clock.now
            let result = await client.send(GatewayHarness.push())
            let elapsed = clock.now - start
            #expect(result.status == status)
            #expect(result.reason == reason)
            #expect(result.attempts == 3)
            #expect(elapsed >= .milliseconds(450), "elapsed \(elapsed) is shorter than the configured 150 + 300 ms")
            #expect(gateway.sink.records.isEmpty)
        }
    }

    @Test("the retry schedule handed to sleep is exponential and capped")
    func recordedSchedule() async throws {
        try await GatewayHarness.with(faults: FaultInjection(serviceUnavailableRate: 1)) { gateway in
            let sleeper = RecordingSleeper()
            let policy = try RetryPolicy(
                maxAttempts: 5,
                initialDelay: .milliseconds(100),
                multiplier: 3,
                maxDelay: .milliseconds(500),
                jitter: 0,
                sleep: sleeper.sleep
            )
            let client = try gateway.makeClient(retryPolicy: policy)
            let result = await client.send(GatewayHarness.push())
            #expect(result.status == 503)
            #expect(result.attempts == 5)
            #expect(sleeper.recorded == [100, 300, 500, 500].map { Duration.milliseconds($0) })
        }
    }

    @Test("a sleep that throws (cancellation) ends the retries with the last answer")
    func sleepCancelled() async throws {
        try await GatewayHarness.with(faults: FaultInjection(tooManyRequestsRate: 1)) { gateway in
            let policy = try RetryPolicy(maxAttempts: 5, initialDelay: .milliseconds(1)) { _ in
                throw CancellationError()
            }
            let client = try gateway.makeClient(retryPolicy: policy)
            let result = await client.send(GatewayHarness.push())
            #expect(result.status == 429)
            #expect(result.attempts == 1)
        }
    }

    @Test("a silent stream times out after the per-stream timeout instead of hanging", .timeLimit(.minutes(2)))
    func silentStreamTimesOut() async throws {
        try await GatewayHarness.with(faults: FaultInjection(silentRate: 1)) { gateway in
            let sleeper = RecordingSleeper()
            let client = try gateway.makeClient(
                streamTimeout: .seconds(1),
                retryPolicy: try RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(1), sleep: sleeper.sleep)
            )
            let clock = ContinuousClock()
            let start = clock.now
            let results = await client.send([GatewayHarness.push(), GatewayHarness.push(), GatewayHarness.push()])
            let elapsed = clock.now - start
            #expect(results.map(\.localOutcome) == Array(repeating: .timeout(after: .seconds(1)), count: 3))
            #expect(results.map(\.status) == [nil, nil, nil])
            // A timed-out push may have been delivered: it is not retried.
            #expect(results.map(\.attempts) == [1, 1, 1])
            #expect(sleeper.recorded.isEmpty)
            #expect(elapsed >= .seconds(1))
            #expect(gateway.sink.records.isEmpty)
        }
    }
}
