import Foundation
public import Logging
import RelayClient
public import Sender
public import ServiceLifecycle
import Synchronization

/// Delivers queued pushes to APNs: leases due rows, sends them through the Sender's ``APNsClient``, and records
/// each outcome (docs/RELAY.md "Queue and delivery").
///
/// A `Service`: on graceful shutdown (SIGTERM) the workers stop leasing, finish the batch in flight and record its
/// outcomes; the rest of the queue stays in the store.
public final class DeliveryService: Service, Sendable {
    /// How the workers lease and retry.
    public struct Configuration: Sendable {
        /// The lease owner name: unique per process (host, pid and a random suffix by default).
        public var owner: String
        /// Concurrent workers, each with its own batch.
        public var workers = 2
        /// The most pushes one worker leases at once.
        public var batchSize = 64
        /// How long a lease lasts; a crashed process's pushes are leased again after it.
        public var lease: Duration = .seconds(60)
        /// How long an idle worker waits before looking again.
        public var pollInterval: Duration = .milliseconds(50)
        /// Attempts before a push that keeps failing with 429/5xx/timeouts is given up (`failed`).
        public var maxAttempts = 12
        /// Backoff: the first delay, doubled each attempt, capped, lengthened by up to `jitter` of itself.
        public var initialBackoff: Duration = .seconds(1)
        public var maximumBackoff: Duration = .seconds(300)
        public var jitter = 0.2
        /// The app's topics (bundle ids): a push to an address registered for another topic is not sent, and the
        /// address is marked failed (`topic-not-allowed`). Empty: every topic (tests of the queue alone).
        public var topics: Set<String> = []

        public init(owner: String = DeliveryService.defaultOwner()) {
            self.owner = owner
        }
    }

    let store: any RelayStore
    let clients: [String: APNsClient]
    let metrics: RelayMetrics
    let configuration: Configuration
    let now: @Sendable () -> Int64
    let logger: Logger
    /// The latest attempts' outcomes, for readiness (docs/RELAY.md "Health").
    public let health = DeliveryHealth()
    private let stopping = Atomic<Bool>(false)
    private let inFlight = Atomic<Int>(0)

    /// - Parameters:
    ///   - store: The queue.
    ///   - clients: One APNs client per environment name (`production`, `development`); one client may serve both.
    ///   - metrics: Where deliveries, retries and latencies are counted.
    ///   - configuration: Workers, leases and backoff.
    ///   - now: Milliseconds since 1970.
    ///   - logger: Gets push ids, statuses and counts; never tokens or bodies.
    public init(
        store: any RelayStore,
        clients: [String: APNsClient],
        metrics: RelayMetrics,
        configuration: Configuration,
        now: @escaping @Sendable () -> Int64 = { RelayClock.nowMs() },
        logger: Logger
    ) {
        self.store = store
        self.clients = clients
        self.metrics = metrics
        self.configuration = configuration
        self.now = now
        self.logger = logger
    }

    /// `<host>-<pid>-<random>`.
    public static func defaultOwner() -> String {
        "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))"
    }

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
            self.stopping.store(true, ordering: .relaxed)
        }
        self.logger.info("delivery workers stopped", metadata: ["owner": "\(self.configuration.owner)"])
    }

    /// Stops leasing (what SIGTERM does); the batch in flight completes.
    public func stop() { self.stopping.store(true, ordering: .relaxed) }

    private func work(_ worker: Int) async {
        var lastPurge: Int64 = 0
        while !self.stopping.load(ordering: .relaxed) && !Task.isCancelled {
            let delivered = await self.runOnce()
            if worker == 0, self.now() - lastPurge > 60_000 {
                lastPurge = self.now()
                try? await self.store.purge(nowMs: lastPurge)
            }
            if delivered == 0 {
                try? await Task.sleep(for: self.configuration.pollInterval)
            }
        }
    }

    /// Leases one batch and delivers it.
    ///
    /// - Returns: how many pushes were leased (0 when the queue had nothing due or the store failed).
    @discardableResult
    public func runOnce() async -> Int {
        let leaseMs = Int64(self.configuration.lease.components.seconds * 1000)
        let leasedAtMs = self.now()
        // Real time, not `now` (tests inject a manual clock): how long outcomes may wait to be recorded.
        let leaseEnds = ContinuousClock.now + self.configuration.lease
        let batch: [LeasedPush]
        do {
            batch = try await self.store.lease(
                owner: self.configuration.owner,
                limit: self.configuration.batchSize,
                nowMs: leasedAtMs,
                leaseMs: leaseMs
            )
        } catch {
            self.logger.warning(
                "leasing failed; retrying",
                metadata: ["error": "\(error.code)", "message": "\(error.message)"]
            )
            try? await Task.sleep(for: .milliseconds(500))
            return 0
        }
        guard !batch.isEmpty else { return 0 }
        self.inFlight.add(batch.count, ordering: .relaxed)
        defer { self.inFlight.subtract(batch.count, ordering: .relaxed) }

        // Group by client (environment); pushes without a usable address are settled without a request.
        var settled: [Settled] = []
        var groups: [String: [LeasedPush]] = [:]
        for push in batch {
            guard let address = push.address else {
                settled.append(Settled(push: push, outcome: .removed, status: "local-no-address"))
                continue
            }
            guard self.configuration.topics.isEmpty || self.configuration.topics.contains(address.topic) else {
                // Registered before the relay was configured with its topics: APNs would refuse it (TopicDisallowed).
                settled.append(
                    Settled(
                        push: push,
                        outcome: .addressRefused(
                            atMs: self.now(),
                            deviceToken: address.deviceToken,
                            status: nil,
                            reason: RelayError.Code.topicNotAllowed.rawValue
                        ),
                        status: "local-topic-not-allowed"
                    )
                )
                continue
            }
            guard self.clients[address.environment] != nil else {
                settled.append(
                    Settled(
                        push: push,
                        outcome: .failed(status: nil, reason: "no APNs client for environment \(address.environment)"),
                        status: "local-no-client"
                    )
                )
                continue
            }
            groups[address.environment, default: []].append(push)
        }
        settled += await withTaskGroup(of: [Settled].self) { group in
            for (environment, pushes) in groups {
                guard let client = self.clients[environment] else { continue }
                group.addTask { await self.send(pushes, with: client) }
            }
            var all: [Settled] = []
            for await part in group { all += part }
            return all
        }
        await self.record(settled, leaseEnds: leaseEnds)
        return batch.count
    }

    /// A push and what became of it.
    struct Settled: Sendable {
        var push: LeasedPush
        var outcome: PushOutcome
        /// The metrics label: APNs' status, or `local-<outcome>`.
        var status: String
    }

    private func send(_ pushes: [LeasedPush], with client: APNsClient) async -> [Settled] {
        var requests: [APNsRequest] = []
        for push in pushes {
            // The database is the truth about a token: a token registered again after a 410 is live again.
            let token = push.address?.deviceToken ?? ""
            if await client.tokenRegistry.isInactive(token) { await client.tokenRegistry.reactivate(token) }
            requests.append(
                APNsRequest(
                    deviceToken: token,
                    headers: PushBuilder.uniformHeaders(
                        topic: push.address?.topic ?? "",
                        apnsID: UUID(uuidString: push.pushID) ?? UUID()
                    ),
                    body: String(decoding: push.body, as: UTF8.self)
                )
            )
        }
        let results = await client.send(requests)
        return zip(pushes, results).map { push, result in
            let (outcome, label) = self.outcome(of: result, for: push)
            return Settled(push: push, outcome: outcome, status: label)
        }
    }

    /// APNs' reasons that refuse a push address for good: the address is marked failed (docs/RELAY.md "Queue and
    /// delivery").
    static let addressRefusals: Set<String> = [
        "BadDeviceToken", "DeviceTokenNotForTopic", "TopicDisallowed", "BadTopic",
    ]

    func outcome(of result: APNsResult, for push: LeasedPush) -> (PushOutcome, String) {
        let now = self.now()
        if let status = result.status {
            let reason = result.reason?.rawValue
            switch status {
            case 200:
                self.health.record(.worked, atMs: now)
                return (.delivered(status: 200), "200")
            case 410:
                self.health.record(.worked, atMs: now)
                return (.unregistered(atMs: result.timestamp ?? now, deviceToken: result.deviceToken), "410")
            case 400 where reason.map(Self.addressRefusals.contains) == true:
                self.health.record(.worked, atMs: now)
                return (
                    .addressRefused(atMs: now, deviceToken: result.deviceToken, status: 400, reason: reason ?? ""),
                    "400"
                )
            case 403:
                // The relay's key or team (InvalidProviderToken, BadEnvironmentKeyIdInToken, ...), not the push: it
                // waits, with backoff, for a relay whose key works; readiness says why meanwhile.
                self.health.record(
                    .refused("403 \(reason ?? "Forbidden"): check --apns-key-file, --apns-key-id and --apns-team-id"),
                    atMs: now
                )
                return (self.retryOrGiveUp(push, status: status, reason: reason, now: now), "403")
            case _ where RetryPolicy.isRetryable(status: status):
                self.health.record(.refused("\(status) \(reason ?? "")"), atMs: now)
                return (self.retryOrGiveUp(push, status: status, reason: reason, now: now), "\(status)")
            default:
                self.health.record(.worked, atMs: now)
                return (.failed(status: status, reason: reason ?? "status \(status)"), "\(status)")
            }
        }
        let local = result.localOutcome
        let label = "local-\(local?.code ?? "unknown")"
        switch local?.code {
        case "tokenInactive":
            return (.unregistered(atMs: now, deviceToken: result.deviceToken), label)
        case "invalidDeviceToken":
            return (.failed(status: nil, reason: "invalid device token"), label)
        case "clientShutdown", "cancelled", nil:
            return (self.retryOrGiveUp(push, status: nil, reason: local?.code, now: now), label)
        default:
            // Timeouts, broken connections, an untrusted certificate: the push may or may not have arrived (a timeout),
            // or could not be sent; it is sent again after a backoff.
            self.health.record(.unreachable(local?.message ?? "no answer"), atMs: now)
            return (self.retryOrGiveUp(push, status: nil, reason: local?.code, now: now), label)
        }
    }

    private func retryOrGiveUp(_ push: LeasedPush, status: Int?, reason: String?, now: Int64) -> PushOutcome {
        guard push.attempts < self.configuration.maxAttempts else {
            return .failed(status: status, reason: "gave up after \(push.attempts) attempts (\(reason ?? "no answer"))")
        }
        return .retry(retryAtMs: now + self.backoffMs(beforeRetry: push.attempts), status: status, reason: reason)
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
    /// until the lease ends: pushes APNs already took are not sent again. Only after the lease (or on shutdown) are
    /// they left to be leased again, so delivery stays at least once.
    private func record(_ settled: [Settled], leaseEnds: ContinuousClock.Instant) async {
        guard !settled.isEmpty else { return }
        let now = self.now()
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
