import Locking

/// A counting semaphore bounding how many pushes are in flight on the client's connection.
///
/// Waiters are served first come, first served. Waiting is not cancellable: a slot is always freed within one
/// per-stream timeout, so no waiter can wait forever, and a cancelled sender notices cancellation right after.
final class InFlightWindow: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    // Locking's PThreadMutex, the package's one lock type (why not Synchronization.Mutex: see its documentation).
    private let state: PThreadMutex<State>

    init(size: Int) {
        precondition(size >= 1, "the window holds at least one push")
        self.state = PThreadMutex(State(available: size))
    }

    /// Takes a slot, waiting for one if all are taken.
    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = self.state.withLock { state -> Bool in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if acquired { continuation.resume() }
        }
    }

    /// Gives a slot back, handing it straight to the longest waiter if there is one.
    func release() {
        let next = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.head < state.waiters.count {
                let waiter = state.waiters[state.head]
                state.head += 1
                if state.head == state.waiters.count {
                    state.waiters.removeAll(keepingCapacity: true)
                    state.head = 0
                }
                return waiter
            }
            state.available += 1
            return nil
        }
        next?.resume()
    }

    /// Runs `body` holding one slot.
    func withSlot<T: Sendable>(_ body: () async -> T) async -> T {
        await self.acquire()
        defer { self.release() }
        return await body()
    }
}
