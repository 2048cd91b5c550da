import E2EECore
import Foundation
import Logging
import Testing

@testable import Relay

/// The delivery workers' wake-up: a submit that queues pushes rings it, and an idle worker leases at once instead of
/// after its poll interval.
@Suite("Relay delivery doorbell")
struct DoorbellTests {
    /// Whether `body` finished before `limit` (a decision, not a latency: the waits under test are an hour long).
    static func finishes(
        within limit: Duration = .seconds(60),
        _ body: @escaping @Sendable () async -> Void
    ) async
        -> Bool
    {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await body()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    @Test("a ring wakes a waiting wait; a ring with nobody waiting makes the next wait return at once")
    func ringWakes() async throws {
        let bell = Doorbell()
        // A wait of an hour, rung once it registered: it must end (else the 60-second guard ends it).
        async let woke = Self.finishes { await bell.wait(upTo: .seconds(3600)) }
        for _ in 0..<6000 where bell.waiting == 0 { try? await Task.sleep(for: .milliseconds(10)) }
        bell.ring()
        #expect(await woke)
        #expect(bell.waiting == 0)

        bell.ring()
        #expect(await Self.finishes { await bell.wait(upTo: .seconds(3600)) })
        #expect(bell.waiting == 0)
    }

    @Test("waits that time out or are cancelled leave nothing behind and never hang")
    func timeoutsAndCancellation() async throws {
        let bell = Doorbell()
        #expect(
            await Self.finishes {
                for _ in 0..<500 { await bell.wait(upTo: .microseconds(50)) }
            }
        )
        let cancelled = Task { await bell.wait(upTo: .seconds(3600)) }
        cancelled.cancel()
        #expect(await Self.finishes { await cancelled.value })
        #expect(bell.waiting == 0)
        // Rings racing timeouts: each wait ends by one or the other, and its cancellation (of the loser) keeps
        // nothing behind.
        #expect(
            await Self.finishes {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for _ in 0..<300 { await bell.wait(upTo: .microseconds(200)) }
                    }
                    group.addTask {
                        for _ in 0..<300 {
                            bell.ring()
                            try? await Task.sleep(for: .microseconds(150))
                        }
                    }
                }
            }
        )
        #expect(bell.waiting == 0)
        #expect(bell.bookkeeping.starting == 0)
        #expect(bell.bookkeeping.cancelled == 0)
    }

    @Test("an accepted submit rings; a duplicate and a refused one do not")
    func submitRings() async throws {
        let bell = Doorbell()
        try await ServiceFixture.with(doorbell: bell) { fixture in
            let alice = try TestUser.make("alice", devices: ["laptop"])
            let bob = try TestUser.make("bob")
            let token = DeliveryToken()
            try await fixture.enroll(bob, token: token)
            let body = submitBody([("phone", try bob.sealText(from: alice.devices[0], to: "phone"))])
            #expect(!bell.isRung)
            _ = try await fixture.service.submit(
                userID: "bob",
                authorization: "Bearer \(token.hex)",
                idempotencyKey: "k",
                body: body
            )
            #expect(bell.isRung)
            // The ring is kept for the next wait, which returns at once and takes it.
            #expect(await Self.finishes { await bell.wait(upTo: .seconds(3600)) })
            #expect(!bell.isRung)
            let duplicate = try await fixture.service.submit(
                userID: "bob",
                authorization: "Bearer \(token.hex)",
                idempotencyKey: "k",
                body: body
            )
            #expect(duplicate.duplicate)
            #expect(!bell.isRung)
            let refused = await relayErrorCode {
                _ = try await fixture.service.submit(
                    userID: "bob",
                    authorization: "Bearer \(DeliveryToken().hex)",
                    idempotencyKey: "k2",
                    body: body
                )
            }
            #expect(refused != nil)
            #expect(!bell.isRung)
        }
    }

    @Test("an idle worker polling once an hour delivers a queued push as soon as the doorbell rings")
    func idleWorkerWakes() async throws {
        try await RelayStoreContractTests.withSQLite { store in
            _ = try await store.publish(RelayStoreContractTests.list(version: 1, devices: ["ok"]), nowMs: 0)
            try await store.registerPush(userID: "u", deviceID: "ok", address: TestUser.address("ok"), nowMs: 0)
            let deliverer = RecordingDeliverer { _ in
                DeliveryReport(outcome: .delivered, status: 200, label: "200", signal: .answered)
            }
            var configuration = DeliveryService.Configuration(owner: "bell")
            configuration.workers = 1
            configuration.pollInterval = .seconds(3600)
            let delivery = DeliveryService(
                store: store,
                deliverers: [deliverer],
                metrics: RelayMetrics(),
                configuration: configuration,
                logger: Logger(label: "delivery")
            )
            let running = Task { try await delivery.run() }
            // The worker found nothing and waits for its hour.
            try await waitUntil(tries: 600, every: .milliseconds(10)) { delivery.doorbell.waiting == 1 }
            _ = try await store.enqueue(
                NewSubmit(userID: "u", idempotencyKey: "k", requestDigest: [1], pushes: [("ok", "p1", [7])]),
                nowMs: WallClock.system.nowMs
            )
            delivery.doorbell.ring()
            try await waitUntil(tries: 600, every: .milliseconds(10)) { !deliverer.deliveries.isEmpty }
            #expect(deliverer.deliveries.map(\.pushID) == ["p1"])
            // Idle again for an hour: stop() wakes it, and the workers end without a cancellation.
            try await waitUntil(tries: 600, every: .milliseconds(10)) { delivery.doorbell.waiting == 1 }
            delivery.stop()
            // The guard's cancellation cancels the workers too, so a stop that does not wake them fails here
            // instead of hanging.
            let stopped = await Self.finishes {
                await withTaskCancellationHandler {
                    _ = try? await running.value
                } onCancel: {
                    running.cancel()
                }
            }
            #expect(stopped)
        }
    }
}
