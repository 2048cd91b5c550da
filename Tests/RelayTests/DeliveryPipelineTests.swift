import Foundation
import Locking
import Logging
import RelayClient
import Testing

@testable import Relay

/// A store that forwards to another and holds every ``RelayStore/complete(_:owner:nowMs:)`` while the test says so:
/// a commit of outcomes that takes long (a slow sync, a slow database), with everything else answering at once.
final class HeldCompletionsStore: RelayStore {
    let inner: any RelayStore
    private struct Gate {
        var held = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var calls = 0
        var leases = 0
    }
    private let gate = PThreadMutex(Gate())

    init(_ inner: any RelayStore) { self.inner = inner }

    /// Leases asked for so far.
    var leaseCalls: Int { self.gate.withLock { $0.leases } }

    /// Completions started so far (held or not).
    var completeCalls: Int { self.gate.withLock { $0.calls } }

    func hold() { self.gate.withLock { $0.held = true } }

    func release() {
        let waiting = self.gate.withLock { gate in
            gate.held = false
            defer { gate.waiting = [] }
            return gate.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func complete(
        _ completions: [Completion],
        owner: String,
        nowMs: Int64
    ) async throws(RelayError)
        -> [CompletionResult]
    {
        await withCheckedContinuation { continuation in
            let go = self.gate.withLock { gate in
                gate.calls += 1
                if gate.held { gate.waiting.append(continuation) }
                return !gate.held
            }
            if go { continuation.resume() }
        }
        return try await self.inner.complete(completions, owner: owner, nowMs: nowMs)
    }

    func migrate() async throws(RelayError) { try await self.inner.migrate() }
    func ping() async throws(RelayError) { try await self.inner.ping() }
    func list(userID: String) async throws(RelayError) -> StoredList? { try await self.inner.list(userID: userID) }
    func publish(_ list: NewList, nowMs: Int64) async throws(RelayError) -> Bool {
        try await self.inner.publish(list, nowMs: nowMs)
    }
    func devices(userID: String) async throws(RelayError) -> [StoredDevice] {
        try await self.inner.devices(userID: userID)
    }
    func consumeNonce(_ nonce: [UInt8], expiresAtMs: Int64, nowMs: Int64) async throws(RelayError) -> Bool {
        try await self.inner.consumeNonce(nonce, expiresAtMs: expiresAtMs, nowMs: nowMs)
    }
    func registerPush(
        userID: String,
        deviceID: String,
        address: RegisteredAddress,
        nowMs: Int64
    )
        async throws(RelayError)
    {
        try await self.inner.registerPush(userID: userID, deviceID: deviceID, address: address, nowMs: nowMs)
    }
    func replaceDeliveryTokens(userID: String, hashes: [[UInt8]], nowMs: Int64) async throws(RelayError) {
        try await self.inner.replaceDeliveryTokens(userID: userID, hashes: hashes, nowMs: nowMs)
    }
    func isDeliveryToken(_ hash: [UInt8], of userID: String) async throws(RelayError) -> Bool {
        try await self.inner.isDeliveryToken(hash, of: userID)
    }
    func submitContext(userID: String, tokenHash: [UInt8]?) async throws(RelayError) -> SubmitContext {
        try await self.inner.submitContext(userID: userID, tokenHash: tokenHash)
    }
    func enqueue(_ submit: NewSubmit, nowMs: Int64) async throws(RelayError) -> EnqueueOutcome {
        try await self.inner.enqueue(submit, nowMs: nowMs)
    }
    func lease(owner: String, limit: Int, nowMs: Int64, leaseMs: Int64) async throws(RelayError) -> [LeasedPush] {
        self.gate.withLock { $0.leases += 1 }
        return try await self.inner.lease(owner: owner, limit: limit, nowMs: nowMs, leaseMs: leaseMs)
    }
    func counts() async throws(RelayError) -> [PushState: Int] { try await self.inner.counts() }
    func push(_ pushID: String) async throws(RelayError) -> PushRecord? { try await self.inner.push(pushID) }
    func deliveredLatenciesMs() async throws(RelayError) -> [Int64] { try await self.inner.deliveredLatenciesMs() }
    func purge(nowMs: Int64) async throws(RelayError) { try await self.inner.purge(nowMs: nowMs) }
}

/// A delivery worker records one batch's outcomes while it leases and delivers the next (docs/RELAY.md "Queue and
/// delivery"), never more than one batch ahead, and a shutdown waits for every delivered batch to be recorded.
@Suite("Relay delivery: recording overlaps the next batch")
struct DeliveryPipelineTests {
    /// A delivery service over `store` whose deliverer answers 200 to every push.
    static func service(
        _ store: any RelayStore,
        owner: String,
        workers: Int,
        configure: (inout DeliveryService.Configuration) -> Void = { _ in }
    ) -> (DeliveryService, RecordingDeliverer) {
        let deliverer = RecordingDeliverer { _ in
            DeliveryReport(outcome: .delivered, status: 200, label: "200", signal: .answered)
        }
        var configuration = DeliveryService.Configuration(owner: owner)
        configuration.workers = workers
        configure(&configuration)
        let delivery = DeliveryService(
            store: store,
            deliverer: deliverer,
            metrics: RelayMetrics(),
            configuration: configuration,
            logger: Logger(label: "delivery")
        )
        return (delivery, deliverer)
    }
    @Test("with its commit held, a worker delivers one more batch, not two; stopping records both and leases no more")
    func oneBatchAhead() async throws {
        try await RelayStoreContractTests.withSQLite { sqlite in
            // 5 pushes, one per device of RelayDelivererTests, all answered 200; batches of 2, one worker.
            let pushIDs = try await RelayDelivererTests.queue(sqlite)
            let store = HeldCompletionsStore(sqlite)
            store.hold()
            let (delivery, deliverer) = Self.service(store, owner: "pipeline", workers: 1) { $0.batchSize = 2 }
            let stopped = PThreadMutex(false)
            let running = Task {
                try await delivery.run()
                stopped.withLock { $0 = true }
            }

            // The first batch's commit is held; the second batch is leased and delivered meanwhile.
            try await waitUntil(tries: 200, every: .milliseconds(25)) { deliverer.callCount >= 2 }
            #expect(deliverer.callCount == 2)
            #expect(deliverer.deliveries.count == 4)
            // Not a third: the worker waits for the first batch's commit before it starts another.
            try await Task.sleep(for: .milliseconds(300))
            #expect(deliverer.callCount == 2)
            #expect(store.completeCalls == 1)
            #expect(delivery.deliveriesInFlight == 4)
            let leased = try await sqlite.counts()
            #expect(leased[.leased] == 4 && leased[.queued] == 1 && leased[.delivered] == nil)

            // Stopping while the commit is held: the service waits for both batches' outcomes.
            delivery.stop()
            try await Task.sleep(for: .milliseconds(300))
            #expect(!stopped.withLock { $0 })
            store.release()
            try await running.value
            #expect(store.completeCalls == 2)
            #expect(deliverer.callCount == 2)
            #expect(delivery.deliveriesInFlight == 0)
            let after = try await sqlite.counts()
            #expect(after[.delivered] == 4 && after[.queued] == 1 && after[.leased] == nil)
            let delivered = Set(deliverer.deliveries.map(\.pushID))
            #expect(delivered.count == 4 && delivered.isSubset(of: Set(pushIDs.values)))
            for pushID in delivered {
                let record = try #require(try await sqlite.push(pushID))
                #expect(record.state == .delivered && record.completions == 1)
            }
        }
    }

    @Test("an idle relay polls with its first worker only: 4 idle workers lease far less than 4 times per interval")
    func idleWorkersDoNotPoll() async throws {
        try await RelayStoreContractTests.withSQLite { sqlite in
            let store = HeldCompletionsStore(sqlite)
            let (delivery, deliverer) = Self.service(store, owner: "idle", workers: 4) {
                $0.pollInterval = .milliseconds(20)
            }
            let running = Task { try await delivery.run() }
            // Every worker leases once when it starts. Waited for, not assumed within the measured second: on 2 cores
            // with the whole suite in parallel, the workers' tasks may start seconds late.
            let started = ContinuousClock.now
            while store.leaseCalls < 4, ContinuousClock.now - started < .seconds(60) {
                try await Task.sleep(for: .milliseconds(10))
            }
            let atStart = store.leaseCalls
            // 1 s idle from then: the first worker leases at most about 50 times (every 20 ms), each other worker
            // about twice (every 400 ms). Were every worker polling, it would be up to about 200.
            try await Task.sleep(for: .seconds(1))
            let leases = store.leaseCalls - atStart
            delivery.stop()
            try await running.value
            #expect(atStart >= 4, "every worker leases once when it starts: \(atStart)")
            #expect(leases <= 70, "\(leases) leases in 1 s")
            #expect(deliverer.callCount == 0)
        }
    }
}
