import E2EECore
import Foundation
import Locking
import Logging
import RelayClient
import Testing

@testable import Relay

/// A submit's pushes committed already leased to this process's workers and handed to them in memory
/// (``DeliveryHandoff``): two transactions per push instead of three, and nothing rests on the memory.
@Suite("Relay delivery handoff: a submit's pushes leased at the commit")
struct DeliveryHandoffTests {
    static let owner = "this-process"

    /// A deliverer that accepts every push.
    static func accepting() -> RecordingDeliverer {
        RecordingDeliverer { _ in DeliveryReport(outcome: .delivered, status: 200, label: "200", signal: .answered) }
    }

    /// Delivery workers on `fixture`'s store and clock, and a relay service that hands them its submits.
    static func wired(
        _ fixture: ServiceFixture,
        owner: String = Self.owner,
        workers: Int = 1,
        batchSize: Int = 64,
        handoffGrace: Duration = .seconds(3600),
        deliverer: RecordingDeliverer
    ) throws -> (delivery: DeliveryService, service: RelayService) {
        var configuration = DeliveryService.Configuration(owner: owner)
        configuration.workers = workers
        configuration.batchSize = batchSize
        configuration.handoffGrace = handoffGrace
        configuration.pollInterval = .seconds(3600)
        let delivery = DeliveryService(
            store: fixture.store,
            deliverers: [deliverer],
            metrics: fixture.metrics,
            configuration: configuration,
            clock: fixture.clock.wallClock,
            logger: Logger(label: "delivery")
        )
        let service = try RelayService(
            store: fixture.store,
            metrics: fixture.metrics,
            clock: fixture.clock.wallClock,
            handoff: delivery.handoff,
            logger: Logger(label: "relay")
        )
        return (delivery, service)
    }

    /// Commits one push to bob's phone under a reservation of `delivery`'s handoff, as the submit path does before it
    /// hands the push over; the reservation.
    static func commitReserved(
        _ fixture: ServiceFixture,
        _ delivery: DeliveryService,
        pushID: String
    ) async throws -> DeliveryHandoff.Reservation {
        let reservation = try #require(delivery.handoff.reserve(1, nowMs: fixture.clock.nowMs))
        var submit = NewSubmit(
            userID: "bob",
            idempotencyKey: "key-\(pushID)",
            requestDigest: [9],
            pushes: [("phone", pushID, [7])]
        )
        submit.lease = reservation.lease
        _ = try await fixture.store.enqueue(submit, nowMs: fixture.clock.nowMs)
        return reservation
    }

    /// Submits `body` to bob with `token` under `key`; the push ids the relay answered.
    static func submit(
        _ service: RelayService,
        _ token: DeliveryToken,
        key: String,
        body: [UInt8]
    ) async throws -> [String] {
        try await service.submit(
            userID: "bob",
            authorization: "Bearer \(token.hex)",
            idempotencyKey: key,
            body: body
        ).pushes.map(\.pushID)
    }

    /// bob with two devices, enrolled, and a submit body of one text to each.
    static func bobAndBody(_ fixture: ServiceFixture, token: DeliveryToken) async throws -> [UInt8] {
        try await Self.bobAndBodies(fixture, token: token).body
    }

    /// bob enrolled, a submit body of one text to each device, and a function that seals another such body.
    static func bobAndBodies(
        _ fixture: ServiceFixture,
        token: DeliveryToken
    ) async throws -> (body: [UInt8], another: () throws -> [UInt8]) {
        let alice = try TestUser.make("alice", devices: ["laptop"])
        let bob = try TestUser.make("bob")
        try await fixture.enroll(bob, token: token)
        let another = {
            submitBody(
                try bob.devices.map { ($0.deviceID, try bob.sealText(from: alice.devices[0], to: $0.deviceID)) }
            )
        }
        return (try another(), another)
    }

    @Test(
        "a submit with room is stored leased (attempt 1) and handed over; a worker delivers it with no lease of its own"
    )
    func handedAndDelivered() async throws {
        try await ServiceFixture.with { fixture in
            let deliverer = Self.accepting()
            let (delivery, service) = try Self.wired(fixture, deliverer: deliverer)
            let token = DeliveryToken()
            let body = try await Self.bobAndBody(fixture, token: token)
            let ids = try await Self.submit(service, token, key: "k", body: body)
            #expect(ids.count == 2)
            for id in ids {
                let record = try #require(try await fixture.store.push(id))
                #expect(record.state == .leased)
                #expect(record.attempts == 1)
            }
            #expect(delivery.handoff.waiting == 2)
            #expect(delivery.handoff.reserved == 0)
            // The doorbell was not rung for the store: nothing is queued there.
            #expect(!delivery.doorbell.takeStoreHint())
            #expect(try await fixture.store.counts() == [.leased: 2])
            // Another owner's lease finds nothing due: the pushes are leased until their lease ends.
            #expect(
                try await fixture.store.lease(owner: "other", limit: 10, nowMs: fixture.clock.nowMs, leaseMs: 1).isEmpty
            )

            #expect(await delivery.runOnce() == 2)
            #expect(deliverer.deliveries.map(\.pushID) == ids)
            #expect(deliverer.deliveries.map(\.attempt) == [1, 1])
            #expect(deliverer.deliveries.map(\.address) == [TestUser.address("phone"), TestUser.address("tablet")])
            #expect(delivery.handoff.waiting == 0)
            for id in ids {
                let record = try #require(try await fixture.store.push(id))
                #expect(record.state == .delivered)
                // A store lease would have made it attempt 2.
                #expect(record.attempts == 1)
                #expect(record.completions == 1)
            }
            #expect(try await fixture.store.counts() == [.delivered: 2])
        }
    }

    @Test("a process that dies with pushes handed over loses none: another owner leases them when the lease expires")
    func deadProcessLeasesExpire() async throws {
        try await ServiceFixture.with { fixture in
            let (dead, service) = try Self.wired(fixture, owner: "dead", deliverer: Self.accepting())
            let token = DeliveryToken()
            let body = try await Self.bobAndBody(fixture, token: token)
            let ids = try await Self.submit(service, token, key: "k", body: body)
            #expect(dead.handoff.waiting == 2)
            // The process dies: its handoff, in memory, is gone. The next process has workers of its own.
            let deliverer = Self.accepting()
            let (next, _) = try Self.wired(fixture, owner: "next", deliverer: deliverer)
            #expect(await next.runOnce() == 0)
            fixture.clock.advance(seconds: 59)
            #expect(await next.runOnce() == 0)
            fixture.clock.advance(seconds: 1)
            #expect(await next.runOnce() == 2)
            #expect(Set(deliverer.deliveries.map(\.pushID)) == Set(ids))
            #expect(deliverer.deliveries.map(\.attempt) == [2, 2])
            for id in ids {
                let record = try #require(try await fixture.store.push(id))
                #expect(record.state == .delivered)
                #expect(record.attempts == 2)
                #expect(record.completions == 1)
            }
        }
    }

    @Test("without room a submit is queued and rings for the store, and later ones queue until the store caught up")
    func fullQueuesUntilCaughtUp() async throws {
        try await ServiceFixture.with { fixture in
            // Room for 2 pushes: one submit of two fills it.
            let (delivery, service) = try Self.wired(fixture, batchSize: 2, deliverer: Self.accepting())
            let token = DeliveryToken()
            let body = try await Self.bobAndBody(fixture, token: token)
            func submit(_ key: String) async throws -> [String] {
                try await Self.submit(service, token, key: key, body: body)
            }
            let first = try await submit("k1")
            #expect(delivery.handoff.waiting == 2)
            #expect(!delivery.doorbell.takeStoreHint())
            let second = try await submit("k2")
            #expect(delivery.handoff.waiting == 2)
            #expect(delivery.handoff.isSpilled)
            for id in second {
                let record = try #require(try await fixture.store.push(id))
                #expect(record.state == .queued)
                #expect(record.attempts == 0)
            }
            #expect(delivery.doorbell.takeStoreHint())
            #expect(try await fixture.store.counts() == [.leased: 2, .queued: 2])

            // A worker takes the store's due pushes first (k2, a full lease of 2: the store may hold more), then fills
            // its batch from the handoff (no room left in it here).
            #expect(await delivery.runOnce() == 2)
            #expect(try await fixture.store.push(second[0])?.state == .delivered)
            #expect(delivery.handoff.isSpilled)
            // A worker takes k1 from the handoff: there is room again, but k3 still queues, behind the backlog the
            // store may hold, until a lease finds the store caught up.
            #expect(delivery.handoff.take(upTo: 2).map(\.push.pushID) == first)
            let third = try await submit("k3")
            #expect(try await fixture.store.push(third[0])?.state == .queued)
            #expect(delivery.handoff.waiting == 0)
            #expect(await delivery.runOnce() == 2)
            #expect(delivery.handoff.isSpilled)
            #expect(await delivery.runOnce() == 0)
            #expect(!delivery.handoff.isSpilled)
            let fourth = try await submit("k4")
            #expect(try await fixture.store.push(fourth[0])?.state == .leased)
            #expect(delivery.handoff.waiting == 2)

            delivery.stop()
            #expect(delivery.handoff.reserve(1, nowMs: fixture.clock.nowMs) == nil)
            let fifth = try await submit("k5")
            #expect(delivery.handoff.waiting == 2)
            #expect(try await fixture.store.push(fifth[0])?.state == .queued)
        }
    }

    @Test("a duplicate or a refused submit hands nothing over and gives its room back")
    func duplicateAndRefusedRelease() async throws {
        try await ServiceFixture.with { fixture in
            let (delivery, service) = try Self.wired(fixture, batchSize: 2, deliverer: Self.accepting())
            let token = DeliveryToken()
            let (body, another) = try await Self.bobAndBodies(fixture, token: token)
            _ = try await service.submit(
                userID: "bob",
                authorization: "Bearer \(token.hex)",
                idempotencyKey: "k",
                body: body
            )
            #expect(await delivery.runOnce() == 2)
            let duplicate = try await service.submit(
                userID: "bob",
                authorization: "Bearer \(token.hex)",
                idempotencyKey: "k",
                body: body
            )
            #expect(duplicate.duplicate)
            #expect(delivery.handoff.waiting == 0)
            #expect(delivery.handoff.reserved == 0)
            // The same key with other pushes: the store refuses it inside the commit.
            let other = try another()
            let refused = await relayErrorCode {
                _ = try await service.submit(
                    userID: "bob",
                    authorization: "Bearer \(token.hex)",
                    idempotencyKey: "k",
                    body: other
                )
            }
            #expect(refused == .idempotencyKeyReused)
            #expect(delivery.handoff.waiting == 0)
            #expect(delivery.handoff.reserved == 0)
            // The room is whole again: a reservation of all of it is granted.
            let reservation = try #require(delivery.handoff.reserve(2, nowMs: 5))
            #expect(reservation.lease == SubmitLease(owner: Self.owner, expiresAtMs: 5 + 60_000))
            delivery.handoff.release(reservation)
            #expect(try await fixture.store.counts() == [.delivered: 2])
        }
    }

    @Test("running workers deliver a handed-over push at once; on stop, pushes handed over meanwhile are delivered")
    func runningAndStopping() async throws {
        try await ServiceFixture.with { fixture in
            let deliverer = Self.accepting()
            let (delivery, service) = try Self.wired(fixture, workers: 2, deliverer: deliverer)
            let token = DeliveryToken()
            let body = try await Self.bobAndBody(fixture, token: token)
            let running = Task { try await delivery.run() }
            // Both workers looked at the store, found nothing, and wait (an hour each, unless woken).
            try await waitUntil(tries: 600, every: .milliseconds(10)) { delivery.doorbell.waiting == 2 }
            let first = try await Self.submit(service, token, key: "k1", body: body)
            try await waitUntil(tries: 600, every: .milliseconds(10)) {
                try await fixture.store.counts() == [.delivered: 2]
            }
            #expect(deliverer.deliveries.map(\.pushID) == first)
            // A submit reserved before the stop and committed after it (the race a graceful stop can meet): its pushes
            // are delivered by the stopping service, not left leased until their lease ends.
            let reservation = try await Self.commitReserved(fixture, delivery, pushID: "late-1")
            let ended = PThreadMutex(false)
            let watcher = Task {
                _ = try? await running.value
                ended.withLock { $0 = true }
            }
            delivery.stop()
            // The workers leave at once (nothing in flight); the stopping service waits for the reservation rather
            // than end with the push left leased. The pause gives a service that did not wait the time to end.
            try await waitUntil(tries: 600, every: .milliseconds(10)) { delivery.doorbell.waiting == 0 }
            try await Task.sleep(for: .milliseconds(200))
            #expect(!ended.withLock { $0 })
            delivery.handoff.hand(
                [
                    LeasedPush(
                        pushID: "late-1",
                        userID: "bob",
                        deviceID: "phone",
                        envelope: [7],
                        attempts: 1,
                        enqueuedAtMs: fixture.clock.nowMs,
                        address: TestUser.address("phone")
                    )
                ],
                under: reservation
            )
            try await running.value
            await watcher.value
            #expect(deliverer.deliveries.map(\.pushID) == first + ["late-1"])
            #expect(try await fixture.store.push("late-1")?.state == .delivered)
            #expect(delivery.handoff.pending == (reserved: 0, waiting: 0))
        }
    }

    @Test("on stop, a submit still committing after the grace leaves its pushes leased in the store, not lost")
    func stoppingGraceEnds() async throws {
        try await ServiceFixture.with { fixture in
            let deliverer = Self.accepting()
            let (delivery, _) = try Self.wired(
                fixture,
                workers: 2,
                handoffGrace: .milliseconds(100),
                deliverer: deliverer
            )
            _ = try await Self.bobAndBody(fixture, token: DeliveryToken())
            let running = Task { try await delivery.run() }
            try await waitUntil(tries: 600, every: .milliseconds(10)) { delivery.doorbell.waiting == 2 }
            _ = try await Self.commitReserved(fixture, delivery, pushID: "slow-1")
            delivery.stop()
            // Never handed: the service ends after its grace, and the push waits in the store for its lease to end.
            try await running.value
            #expect(deliverer.deliveries.isEmpty)
            #expect(try await fixture.store.push("slow-1")?.state == .leased)
            #expect(delivery.handoff.pending == (reserved: 1, waiting: 0))
            // Its lease ends: the next lease (a restart, another instance) takes it.
            fixture.clock.advance(ms: 60_001)
            let (restarted, _) = try Self.wired(fixture, owner: "relay-b", deliverer: deliverer)
            #expect(await restarted.runOnce() == 1)
            #expect(deliverer.deliveries.map(\.pushID) == ["slow-1"])
        }
    }

    @Test("a lease ends its whole milliseconds after it is taken, sub-second part included")
    func leaseMilliseconds() {
        #expect(Duration.seconds(60).wholeMilliseconds == 60_000)
        #expect(Duration.milliseconds(1500).wholeMilliseconds == 1500)
        #expect(Duration.microseconds(2999).wholeMilliseconds == 2)
        #expect(Duration.nanoseconds(999_999).wholeMilliseconds == 0)
        let handoff = DeliveryHandoff(owner: Self.owner, lease: .milliseconds(1500), capacity: 4, doorbell: Doorbell())
        #expect(handoff.reserve(1, nowMs: 10)?.lease == SubmitLease(owner: Self.owner, expiresAtMs: 1510))
    }

    @Test("the doorbell: wakeOne wakes one waiter without hinting the store; ring hints the store once")
    func doorbellWakeOne() async throws {
        let bell = Doorbell()
        async let first: Bool = DoorbellTests.finishes { await bell.wait(upTo: .seconds(3600)) }
        async let second: Bool = DoorbellTests.finishes(within: .seconds(2)) { await bell.wait(upTo: .seconds(3600)) }
        try await waitUntil(tries: 6000, every: .milliseconds(10)) { bell.waiting == 2 }
        bell.wakeOne()
        try await waitUntil(tries: 6000, every: .milliseconds(10)) { bell.waiting == 1 }
        #expect(!bell.takeStoreHint())
        bell.ring()
        let woke = await [first, second]
        #expect(woke == [true, true])
        #expect(bell.takeStoreHint())
        #expect(!bell.takeStoreHint())
    }
}
