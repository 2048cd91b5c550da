#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a pthread mutex, with the same `withLock` as `Synchronization.Mutex`.
///
/// Why not `Synchronization.Mutex`: on Linux its fast paths are inlined atomics (which ThreadSanitizer sees), but a
/// contended lock is handed over inside the kernel (`FUTEX_LOCK_PI`/`FUTEX_UNLOCK_PI`, called from the
/// uninstrumented `libswiftSynchronization.so`). ThreadSanitizer then sees no happens-before edge between the two
/// holders and reports a race ("Swift access race" on the `inout` value) between accesses that both held the lock.
/// ThreadSanitizer intercepts `pthread_mutex_lock`/`unlock`, so this lock is modelled exactly. The cost is one
/// allocation per lock and a call into libc per acquisition, which is nothing next to what these locks guard
/// (SQLite transactions, file writes, connection state).
///
/// The lock is not reentrant: calling `withLock` on the same instance from inside `body` deadlocks.
package final class PThreadMutex<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let value: UnsafeMutablePointer<Value>

    /// Creates the lock holding `initialValue`.
    package init(_ initialValue: consuming sending Value) {
        self.mutex = .allocate(capacity: 1)
        self.mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(self.mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: initialValue)
    }

    deinit {
        self.value.deinitialize(count: 1)
        self.value.deallocate()
        pthread_mutex_destroy(self.mutex)
        self.mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value, holding the lock for the whole call.
    package func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let locked = pthread_mutex_lock(self.mutex)
        precondition(locked == 0, "pthread_mutex_lock failed: \(locked)")
        defer {
            let unlocked = pthread_mutex_unlock(self.mutex)
            precondition(unlocked == 0, "pthread_mutex_unlock failed: \(unlocked)")
        }
        return try body(&self.value.pointee)
    }
}
