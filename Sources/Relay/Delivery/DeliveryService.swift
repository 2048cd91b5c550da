public import E2EECore
import Foundation
public import Logging
import RelayClient
public import ServiceLifecycle
import Synchronization

/// Delivers queued pushes: leases due rows, hands them to its ``PushDeliverer`` (``APNsDeliverer``: the Sender's
/// ``APNsClient``), and records each outcome (docs/RELAY.md "Queue and delivery").
///
/// A `Service`: on graceful shutdown (SIGTERM) the workers stop leasing, finish the batches in flight and record
/// their outcomes; the rest of the queue stays in the store.
public final class DeliveryService: Service, Sendable {
    /// How the workers lease and retry.
    public struct Configuration: Sendable {
        /// The lease owner name: unique per process (host, pid and a random suffix by default).
        public var owner: String
        /// Concurrent workers, each with its own batch.
        public var workers = 4
        /// The most pushes one worker leases at once.
        public var batchSize = 64
        /// How long a lease lasts; a crashed process's pushes are leased again after it.
        public var lease: Duration = .seconds(60)
        /// How long the first worker waits, when it finds nothing due, before it looks again (the others wait
        /// 20 times as long unless the doorbell rings).
        public var pollInterval: Duration = .milliseconds(50)
        /// Attempts before a push that keeps failing with 429/5xx/timeouts is given up (`failed`).
        public var maxAttempts = 12
        /// Backoff: the first delay, doubled each attempt, capped, lengthened by up to `jitter` of itself.
        public var initialBackoff: Duration = .seconds(1)
        public var maximumBackoff: Duration = .seconds(300)
        public var jitter = 0.2
        /// At a graceful stop, how long the workers wait for submits that reserved room in the ``handoff`` before the
        /// stop and have not committed yet, so that they deliver those pushes rather than leave them leased until their
        /// lease ends. A submit still committing after it leaves its pushes leased in the store: they are delivered
        /// when the lease ends, as a dead process's are.
        public var handoffGrace: Duration = .seconds(5)
        public init(owner: String = DeliveryService.defaultOwner()) {
            self.owner = owner
        }
    }

    let store: any RelayStore
    /// One deliverer per push service.
    let deliverers: [PushService: any PushDeliverer]
    let metrics: RelayMetrics
    let configuration: Configuration
    /// Now, for leases, retry times, outcomes and purges (a test's ``WallClock`` moves it by hand).
    let clock: WallClock
    let logger: Logger
    /// Rung by the submit path when pushes are queued: idle workers lease at once instead of after the poll.
    public let doorbell: Doorbell
    /// Where the submit path hands the pushes it committed already leased to this process (``RelayService``'s).
    public let handoff: DeliveryHandoff
    /// The latest attempts' outcomes, for readiness (docs/RELAY.md "Health").
    public let health = DeliveryHealth()
    private let stopping = Atomic<Bool>(false)
    private let inFlight = Atomic<Int>(0)

    /// - Parameters:
    ///   - store: The queue.
    ///   - deliverers: What sends the pushes to their push services (``APNsDeliverer``), one per service: a push is
    ///     handed to the deliverer of its address's service; with none, it fails (`unsupported-push-service`).
    ///   - metrics: Where deliveries, retries and latencies are counted.
    ///   - configuration: Workers, leases and backoff.
    ///   - clock: The wall clock (a test's moves by hand).
    ///   - doorbell: What the submit path rings when it queues pushes (``RelayService``'s).
    ///   - logger: Gets push ids, statuses and counts; never tokens or bodies.
    /// - Precondition: no two deliverers of one service.
    public init(
        store: any RelayStore,
        deliverers: [any PushDeliverer],
        metrics: RelayMetrics,
        configuration: Configuration,
        clock: WallClock = .system,
        doorbell: Doorbell = Doorbell(),
        logger: Logger
    ) {
        self.doorbell = doorbell
        self.handoff = DeliveryHandoff(
            owner: configuration.owner,
            lease: configuration.lease,
            capacity: configuration.workers * configuration.batchSize,
            doorbell: doorbell
        )
        self.store = store
        self.deliverers = Dictionary(deliverers.map { ($0.service, $0) }) { first, _ in
            preconditionFailure("two deliverers of the push service \(first.service)")
        }
        self.metrics = metrics
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
    }

    /// A delivery service with one deliverer.
    public convenience init(
        store: any RelayStore,
        deliverer: any PushDeliverer,
        metrics: RelayMetrics,
        configuration: Configuration,
        clock: WallClock = .system,
        logger: Logger
    ) {
        self.init(
            store: store,
            deliverers: [deliverer],
            metrics: metrics,
            configuration: configuration,
            clock: clock,
            logger: logger
        )
    }

    /// `<host>-<pid>-<random>`.
    public static func defaultOwner() -> String {
        "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// How many poll intervals a worker other than the first waits when it finds nothing due and nobody rings.
    static let idleFactor = 20

    /// Pushes being sent right now (tests watch a drain with it).
    public var deliveriesInFlight: Int { self.inFlight.load(ordering: .relaxed) }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<self.configuration.workers {
                    group.addTask { await self.work(worker) }
                }
            }
        } onGracefulShutdown: {
            self.stop()
        }
        await self.deliverHandedAtStop()
        self.logger.info("delivery workers stopped", metadata: ["owner": "\(self.configuration.owner)"])
    }

    /// Delivers the pushes handed over while the workers stopped: a submit that reserved room before the stop and
    /// committed as the workers left. They are delivered now rather than left leased until their lease ends. Submits
    /// still committing under a reservation are waited for, up to ``Configuration/handoffGrace``: no new reservation
    /// is granted once stopping, so their count only falls.
    private func deliverHandedAtStop() async {
        let deadline = ContinuousClock.now + self.configuration.handoffGrace
        while true {
            while let batch = await self.leaseAndDeliver(.handedOnly) { await self.record(batch) }
            let (reserved, waiting) = self.handoff.pending
            if waiting > 0 { continue }
            guard reserved > 0 else { return }
            guard ContinuousClock.now < deadline else {
                self.logger.warning(
                    "submits still committing at shutdown: their pushes stay leased and are delivered when the lease ends",
                    metadata: ["pushes": "\(reserved)", "owner": "\(self.configuration.owner)"]
                )
                return
            }
            do { try await Task.sleep(for: .milliseconds(5)) } catch { return }
        }
    }

    /// Stops leasing (what SIGTERM does); the batch in flight completes, and idle workers stop at once rather
    /// than after their poll interval.
    public func stop() {
        self.handoff.close()
        self.stopping.store(true, ordering: .relaxed)
        self.doorbell.ring()
    }

    /// One worker: leases a batch, delivers it, and records its outcomes while it leases and delivers the next.
    ///
    /// The commit of one batch's outcomes (a sync on SQLite, a round trip on PostgreSQL) overlaps the next batch's
    /// lease and delivery, so the push service is not left idle during it. At most one batch per worker waits to be
    /// recorded: a worker whose recording is slower than its delivery waits for it before it starts another. The
    /// pushes of a batch stay leased to this owner until their outcomes are recorded, so no other lease takes them.
    private func work(_ worker: Int) async {
        await withTaskGroup(of: Void.self) { recording in
            var lastPurge: Int64 = 0
            // When this worker last leased from the store: pushes handed over by the submit path are taken first,
            // but never for longer than the poll interval without a look at the store (retries falling due,
            // another instance's pushes, a backlog queued while the handoff was full).
            // At start it looks at once (a restart finds the pushes queued before it).
            var lastStoreLease = ContinuousClock.now - self.configuration.pollInterval
            while !self.stopping.load(ordering: .relaxed) && !Task.isCancelled {
                let storeDue = ContinuousClock.now - lastStoreLease >= self.configuration.pollInterval
                let batch = await self.leaseAndDeliver(storeDue ? .storeFirst : .handedFirst)
                if let batch {
                    if batch.fromStore != nil { lastStoreLease = .now }
                    // The previous batch's recording, if any (an empty group answers at once).
                    await recording.next()
                    recording.addTask { await self.record(batch) }
                    // A full lease: more may be due (retries, another instance's pushes); wake the idle workers.
                    if (batch.fromStore ?? 0) >= self.configuration.batchSize { self.doorbell.ring() }
                    // More handed over than this batch took: wake another worker for them.
                    if self.handoff.waiting > 0 { self.doorbell.wakeOne() }
                } else if storeDue {
                    lastStoreLease = .now
                }
                if worker == 0, self.clock.nowMs - lastPurge > 60_000 {
                    lastPurge = self.clock.nowMs
                    try? await self.store.purge(nowMs: lastPurge)
                }
                if batch == nil {
                    // Only the first worker polls at the interval: an idle relay leases once per interval, not once
                    // per worker. The others wait for the doorbell (a submit, or a worker that found a full batch).
                    let poll = self.configuration.pollInterval
                    await self.doorbell.wait(upTo: worker == 0 ? poll : poll * Self.idleFactor)
                }
            }
            // Leaving the group waits for the last batch's outcomes: shutdown records what was delivered.
        }
    }

    /// Leases one batch (the store's due pushes, then those handed over), delivers it and records its outcomes.
    ///
    /// - Returns: how many pushes were leased (0 when the queue had nothing due or the store failed).
    @discardableResult
    public func runOnce() async -> Int {
        guard let batch = await self.leaseAndDeliver(.storeFirst) else { return 0 }
        await self.record(batch)
        return batch.leased
    }

    /// A delivered batch whose outcomes are still to be recorded.
    struct DeliveredBatch: Sendable {
        /// How many pushes were leased.
        var leased: Int
        /// How many of them a lease took from the store (nil when it did not ask the store).
        var fromStore: Int?
        var settled: [Settled]
        /// When the batch's leases end (real time): how long its outcomes may wait to be recorded.
        var leaseEnds: ContinuousClock.Instant
    }

    /// Where a batch comes from.
    enum BatchSource {
        /// The store's due pushes, filled up with those handed over.
        case storeFirst
        /// The pushes handed over; when there are none, the store's due pushes if the doorbell rang for the store.
        case handedFirst
        /// The pushes handed over alone (the last batches at shutdown).
        case handedOnly
    }

    /// Leases one batch and delivers it; counts it in ``deliveriesInFlight`` until ``record(_:)`` has run.
    ///
    /// Pushes the submit path handed over (``handoff``) are leased already; the others are leased from the store.
    ///
    /// - Returns: nil when the queue had nothing due or the store failed.
    func leaseAndDeliver(_ source: BatchSource) async -> DeliveredBatch? {
        var batch: [LeasedPush] = []
        var fromStore: Int?
        // Real time, not `clock` (tests move it by hand): how long outcomes may wait to be recorded.
        var leaseEnds = ContinuousClock.now + self.configuration.lease
        if source == .storeFirst {
            guard let leased = await self.leaseFromStore(limit: self.configuration.batchSize) else { return nil }
            batch = leased
            fromStore = leased.count
        }
        let handed = self.handoff.take(upTo: self.configuration.batchSize - batch.count)
        if !handed.isEmpty {
            batch += handed.map(\.push)
            leaseEnds = min(leaseEnds, handed.map(\.leaseEnds).min() ?? leaseEnds)
        } else if source == .handedFirst, self.doorbell.takeStoreHint() {
            guard let leased = await self.leaseFromStore(limit: self.configuration.batchSize) else { return nil }
            batch = leased
            fromStore = leased.count
        }
        guard !batch.isEmpty else { return nil }
        self.inFlight.add(batch.count, ordering: .relaxed)

        // Pushes without a usable address are settled without asking a deliverer; the others go to their service's.
        var settled: [Settled] = []
        var byService: [PushService: [(push: LeasedPush, delivery: PushDelivery)]] = [:]
        for push in batch {
            guard let address = push.address else {
                settled.append(Settled(push: push, outcome: .removed, status: "local-no-address"))
                continue
            }
            guard self.deliverers[address.push.service] != nil else {
                // Registered for a service this relay has no deliverer for (a database shared with a relay that
                // has one, or restored): the address fails with a reason, the push is not silently dropped.
                let outcome = PushOutcome.addressRefused(
                    atMs: self.clock.nowMs,
                    address: address.push.address,
                    status: nil,
                    reason: RelayError.Code.unsupportedPushService.rawValue
                )
                settled.append(Settled(push: push, outcome: outcome, status: "local-unsupported-push-service"))
                continue
            }
            let delivery = PushDelivery(
                pushID: push.pushID,
                address: address,
                envelope: push.envelope,
                attempt: push.attempts
            )
            byService[address.push.service, default: []].append((push, delivery))
        }
        for (push, address, report) in await self.deliver(byService) {
            settled.append(
                Settled(
                    push: push,
                    outcome: self.outcome(of: report, for: push, address: address),
                    status: report.label
                )
            )
        }
        return DeliveredBatch(leased: batch.count, fromStore: fromStore, settled: settled, leaseEnds: leaseEnds)
    }

    /// Up to `limit` due pushes leased from the store, or nil when the store failed (after a pause).
    private func leaseFromStore(limit: Int) async -> [LeasedPush]? {
        do {
            let leased = try await self.store.lease(
                owner: self.configuration.owner,
                limit: limit,
                nowMs: self.clock.nowMs,
                leaseMs: self.configuration.lease.wholeMilliseconds
            )
            if leased.count < limit { self.handoff.storeCaughtUp() }
            return leased
        } catch {
            self.logger.warning(
                "leasing failed; retrying",
                metadata: ["error": "\(error.code)", "message": "\(error.message)"]
            )
            try? await Task.sleep(for: .milliseconds(500))
            return nil
        }
    }

    /// Each service's deliverer gets its pushes at once; several services in parallel.
    private func deliver(
        _ byService: [PushService: [(push: LeasedPush, delivery: PushDelivery)]]
    ) async -> [(LeasedPush, RegisteredAddress, DeliveryReport)] {
        // One service (the usual relay): no task group to build per batch.
        if byService.count == 1, let (service, items) = byService.first, let deliverer = self.deliverers[service] {
            return await Self.send(items, to: deliverer)
        }
        return await withTaskGroup(of: [(LeasedPush, RegisteredAddress, DeliveryReport)].self) { group in
            for (service, items) in byService {
                guard let deliverer = self.deliverers[service] else { continue }
                group.addTask { await Self.send(items, to: deliverer) }
            }
            var all: [(LeasedPush, RegisteredAddress, DeliveryReport)] = []
            for await part in group { all += part }
            return all
        }
    }

    private static func send(
        _ items: [(push: LeasedPush, delivery: PushDelivery)],
        to deliverer: any PushDeliverer
    ) async -> [(LeasedPush, RegisteredAddress, DeliveryReport)] {
        let reports = await deliverer.deliver(items.map(\.delivery))
        return zip(items, reports).map { ($0.push, $0.delivery.address, $1) }
    }

    /// A push and what became of it.
    struct Settled: Sendable {
        var push: LeasedPush
        var outcome: PushOutcome
        /// The metrics label: the service's status (APNs' `200`, `410`), or `local-<outcome>`.
        var status: String
    }

    /// What the queue records for a deliverer's report, and what readiness learns from it.
    func outcome(of report: DeliveryReport, for push: LeasedPush, address: RegisteredAddress) -> PushOutcome {
        let now = self.clock.nowMs
        switch report.signal {
        case .answered: self.health.record(.worked, atMs: now)
        case .refused(let message): self.health.record(.refused(message), atMs: now)
        case .unreachable(let message): self.health.record(.unreachable(message), atMs: now)
        case .notAsked: break
        }
        switch report.outcome {
        case .delivered:
            return .delivered(status: report.status)
        case .unregistered(let sinceMs):
            return .unregistered(atMs: sinceMs ?? now, address: address.push.address)
        case .addressRefused(let reason):
            return .addressRefused(atMs: now, address: address.push.address, status: report.status, reason: reason)
        case .rejected(let reason):
            return .failed(status: report.status, reason: reason)
        case .retryLater(let reason, let retryAfterMs):
            return self.retryOrGiveUp(push, status: report.status, reason: reason, retryAfterMs: retryAfterMs, now: now)
        }
    }

    private func retryOrGiveUp(
        _ push: LeasedPush,
        status: Int?,
        reason: String?,
        retryAfterMs: Int64?,
        now: Int64
    ) -> PushOutcome {
        guard push.attempts < self.configuration.maxAttempts else {
            return .failed(status: status, reason: "gave up after \(push.attempts) attempts (\(reason ?? "no answer"))")
        }
        // The relay's backoff, or longer when the service asked for a longer wait.
        let delay = max(self.backoffMs(beforeRetry: push.attempts), retryAfterMs ?? 0)
        return .retry(retryAtMs: now + delay, status: status, reason: reason)
    }

    /// The delay before retry `n` (1-based), in ms, with jitter.
    func backoffMs(beforeRetry retry: Int) -> Int64 {
        let initial =
            Double(self.configuration.initialBackoff.components.seconds) * 1000
            + Double(self.configuration.initialBackoff.components.attoseconds) / 1e15
        let maximum = Double(self.configuration.maximumBackoff.components.seconds) * 1000
        let base = min(initial * pow(2, Double(max(retry - 1, 0))), maximum)
        let jittered = min(base * (1 + Double.random(in: 0...self.configuration.jitter)), max(maximum, base))
        return Int64(jittered)
    }

    /// Records a batch's outcomes in one transaction and counts them.
    ///
    /// While the store cannot write (PostgreSQL down, a full disk) the outcomes are kept and recording is retried
    /// until the lease ends: pushes the push service already took are not sent again. Only after the lease (or on shutdown) are
    /// they left to be leased again, so delivery stays at least once.
    private func record(_ batch: DeliveredBatch) async {
        defer { self.inFlight.subtract(batch.leased, ordering: .relaxed) }
        let (settled, leaseEnds) = (batch.settled, batch.leaseEnds)
        guard !settled.isEmpty else { return }
        let now = self.clock.nowMs
        for item in settled {
            self.metrics.delivery(status: item.status)
            if case .retry = item.outcome { self.metrics.retries.increment() }
            self.logger.debug(
                "delivery",
                metadata: [
                    "push": "\(item.push.pushID)", "status": "\(item.status)", "attempt": "\(item.push.attempts)",
                ]
            )
        }
        let completions = settled.map {
            Completion(pushID: $0.push.pushID, outcome: $0.outcome, attempt: $0.push.attempts)
        }
        var results: [CompletionResult] = []
        var pause: Duration = .milliseconds(250)
        while true {
            do {
                results = try await self.store.complete(completions, owner: self.configuration.owner, nowMs: now)
                break
            } catch {
                let give =
                    self.stopping.load(ordering: .relaxed) || Task.isCancelled || ContinuousClock.now >= leaseEnds
                if give {
                    // The leases run out and the pushes are delivered again: at least once.
                    self.logger.warning(
                        "could not record delivery outcomes; the pushes will be leased again",
                        metadata: ["pushes": "\(settled.count)", "error": "\(error.code)"]
                    )
                    return
                }
                self.logger.warning(
                    "could not record delivery outcomes; retrying until the lease ends",
                    metadata: ["pushes": "\(settled.count)", "error": "\(error.code)", "message": "\(error.message)"]
                )
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(2))
            }
        }
        for (item, result) in zip(settled, results) {
            guard case .delivered = item.outcome else { continue }
            if result == .alreadyCompleted {
                self.metrics.duplicateDeliveries.increment()
            } else {
                self.metrics.enqueueToDelivered.record(.milliseconds(max(now - item.push.enqueuedAtMs, 0)))
            }
        }
    }
}
