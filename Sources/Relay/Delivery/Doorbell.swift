import Locking

/// Wakes idle delivery workers when a submit commits in this process.
///
/// A worker that finds nothing due waits up to its poll interval before it leases again. Without a wake-up, a push
/// submitted meanwhile waits for the rest of that interval, and below saturation that wait, not the store, is most
/// of the time from submit to APNs (docs/BENCHMARKS.md). The poll stays: pushes committed by another instance on
/// the same PostgreSQL database, and retries falling due, are found by it.
public final class Doorbell: Sendable {
    private struct State {
        /// Rung while no worker waited: the next wait returns at once, so a ring between a worker's empty lease and
        /// its wait is not lost.
        var rung = false
        /// Rung by ``ring()`` since a worker last looked: the store may have pushes due now.
        var storeHint = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits that have an id but have not registered yet.
        var starting: Set<Int> = []
        /// Of those, the ones cancelled already (their registration then resumes at once). Only a wait still
        /// starting goes here, so nothing stays behind for a wait that a ring ended before its cancellation.
        var cancelled: Set<Int> = []
        var nextID = 0
    }

    private let state = PThreadMutex(State())

    public init() {}

    /// Workers waiting now (tests).
    var waiting: Int { self.state.withLock { $0.waiters.count } }

    /// Whether a ring is kept for the next wait (tests).
    var isRung: Bool { self.state.withLock { $0.rung } }

    /// Waits started, registered or cancelled but not yet ended, and cancellations kept for them (tests).
    var bookkeeping: (starting: Int, cancelled: Int) {
        self.state.withLock { ($0.starting.count, $0.cancelled.count) }
    }

    /// Pushes were queued in the store: wakes every waiting worker to lease; with none waiting, the next wait
    /// returns at once.
    public func ring() {
        let waiters = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.storeHint = true
            guard !state.waiters.isEmpty else {
                state.rung = true
                return []
            }
            let waiters = Array(state.waiters.values)
            state.waiters.removeAll()
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Pushes were handed over (``DeliveryHandoff``): wakes one waiting worker to take them; with none waiting, the
    /// next wait returns at once. The store is not hinted: the others stay asleep.
    func wakeOne() {
        let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let id = state.waiters.keys.first else {
                state.rung = true
                return nil
            }
            return state.waiters.removeValue(forKey: id)
        }
        waiter?.resume()
    }

    /// Whether ``ring()`` rang since the last call: a worker that was woken and found nothing handed over leases
    /// from the store only then (or when its poll interval has passed).
    func takeStoreHint() -> Bool {
        self.state.withLock { state in
            defer { state.storeHint = false }
            return state.storeHint
        }
    }

    /// Returns when the bell rings or after `timeout`, whichever comes first.
    func wait(upTo timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForRing() }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForRing() async {
        let id = self.state.withLock { state -> Int in
            state.nextID += 1
            state.starting.insert(state.nextID)
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = self.state.withLock { state -> Bool in
                    state.starting.remove(id)
                    if state.cancelled.remove(id) != nil { return true }
                    if state.rung {
                        state.rung = false
                        return true
                    }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                // Not registered yet: its registration resumes at once. Already resumed: nothing to do.
                if state.starting.contains(id) { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume()
        }
    }
}
