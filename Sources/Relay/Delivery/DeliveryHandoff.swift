import Locking

/// Hands the pushes of a committed submit straight to this process's delivery workers, so that a push costs the
/// queue two transactions (the submit, the outcome) instead of three (the submit, a lease, the outcome).
///
/// Before it enqueues, the submit path asks for a ``Reservation``; with one, the store commits the pushes already
/// leased to this process's owner (attempt 1, the lease's usual length), exactly as a lease taken at the commit
/// would leave them. Once the commit is durable they wait here, in memory, for the next worker. Nothing rests on
/// that memory: a process that dies before delivering them leaves them leased in the store, and they are leased
/// again when the lease expires, as the pushes of any lease a dead process held (docs/RELAY.md "Queue and delivery").
///
/// A reservation is refused, and the pushes are queued for a lease as before, when the workers are stopping or when
/// the pushes waiting here (and those reserved) would exceed the capacity: a backlog stays in the store, leased in
/// due order, and no lease ages in memory behind it. Once refused for lack of room, reservations stay refused until
/// a worker's lease finds fewer due pushes than it asked for (``storeCaughtUp()``): pushes submitted later do not
/// overtake the backlog queued before them.
public final class DeliveryHandoff: Sendable {
    /// A push waiting for a worker, with when its lease ends (real time).
    struct Entry: Sendable {
        var push: LeasedPush
        var leaseEnds: ContinuousClock.Instant
    }

    /// Room for `count` pushes, and the lease the store records them under.
    public struct Reservation: Sendable {
        public let lease: SubmitLease
        let count: Int
        let leaseEnds: ContinuousClock.Instant
    }

    private struct State {
        var open = true
        /// A reservation was refused for lack of room and the store has not caught up since.
        var spilled = false
        var reserved = 0
        var entries: [Entry] = []
    }

    /// The lease owner: the delivery workers' (``DeliveryService/Configuration/owner``).
    public let owner: String
    /// How long a lease lasts.
    let lease: Duration
    /// The most pushes waiting or reserved at once.
    let capacity: Int
    /// Wakes an idle worker when pushes arrive.
    let doorbell: Doorbell
    private let state = PThreadMutex(State())

    init(owner: String, lease: Duration, capacity: Int, doorbell: Doorbell) {
        self.owner = owner
        self.lease = lease
        self.capacity = capacity
        self.doorbell = doorbell
    }

    /// Pushes waiting for a worker (tests, shutdown).
    var waiting: Int { self.state.withLock { $0.entries.count } }

    /// Pushes reserved and not yet handed or released (tests).
    var reserved: Int { self.state.withLock { $0.reserved } }

    /// Pushes reserved and pushes waiting, read together: a ``hand(_:under:)`` moves pushes from one to the other at
    /// once, so no push is in neither.
    var pending: (reserved: Int, waiting: Int) { self.state.withLock { ($0.reserved, $0.entries.count) } }

    /// Room for `count` pushes leased from `nowMs`, or nil (stopping, or full): then the submit queues them.
    public func reserve(_ count: Int, nowMs: Int64) -> Reservation? {
        let leaseEnds = ContinuousClock.now + self.lease
        let granted = self.state.withLock { state -> Bool in
            guard state.open, !state.spilled else { return false }
            guard state.entries.count + state.reserved + count <= self.capacity else {
                state.spilled = true
                return false
            }
            state.reserved += count
            return true
        }
        guard granted else { return nil }
        return Reservation(
            lease: SubmitLease(owner: self.owner, expiresAtMs: nowMs + self.lease.wholeMilliseconds),
            count: count,
            leaseEnds: leaseEnds
        )
    }

    /// The submit's pushes, committed under `reservation`'s lease: they wait for the next worker.
    public func hand(_ pushes: [LeasedPush], under reservation: Reservation) {
        self.state.withLock { state in
            state.reserved -= reservation.count
            state.entries.append(contentsOf: pushes.map { Entry(push: $0, leaseEnds: reservation.leaseEnds) })
        }
        self.doorbell.wakeOne()
    }

    /// The submit stored nothing under `reservation` (it failed, or it was a duplicate).
    public func release(_ reservation: Reservation) {
        self.state.withLock { $0.reserved -= reservation.count }
    }

    /// Up to `limit` waiting pushes, oldest first.
    func take(upTo limit: Int) -> [Entry] {
        guard limit > 0 else { return [] }
        return self.state.withLock { state -> [Entry] in
            let count = min(limit, state.entries.count)
            guard count > 0 else { return [] }
            let taken = Array(state.entries.prefix(count))
            state.entries.removeFirst(count)
            return taken
        }
    }

    /// A lease found fewer due pushes than it asked for: no backlog waits in the store, and reservations are granted
    /// again when there is room.
    func storeCaughtUp() {
        self.state.withLock { $0.spilled = false }
    }

    /// Whether reservations are refused until the store catches up (tests).
    var isSpilled: Bool { self.state.withLock { $0.spilled } }

    /// No more reservations: the workers are stopping.
    func close() {
        self.state.withLock { $0.open = false }
    }
}

extension Duration {
    /// The duration in whole milliseconds (rounded down): the store's clock. The handoff's leases and the workers'
    /// store leases both end `lease.wholeMilliseconds` after they are taken.
    var wholeMilliseconds: Int64 {
        self.components.seconds * 1000 + self.components.attoseconds / 1_000_000_000_000_000
    }
}
