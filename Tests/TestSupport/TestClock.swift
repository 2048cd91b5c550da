public import E2EECore
public import Foundation
import Locking

/// The one test clock: a wall clock a test sets and advances by hand, so expiry, ring timeouts, token refresh, the
/// relay's leases and the gateway's token rules are tested without sleeping. Hand ``wallClock`` to a library: every
/// library takes E2EECore's `WallClock`.
public final class TestClock: Sendable {
    private let current: PThreadMutex<Int64>

    /// A clock reading `ms` milliseconds since 1970.
    public init(ms: Int64 = 1_800_000_000_000) {
        self.current = PThreadMutex(ms)
    }

    /// A clock reading `date` (to the millisecond).
    public convenience init(_ date: Date) {
        self.init(ms: Int64((date.timeIntervalSince1970 * 1000).rounded(.down)))
    }

    /// Now, in milliseconds since 1970.
    public var nowMs: Int64 { self.current.withLock { $0 } }

    /// Now, as a `Date`.
    public var now: Date { Date(timeIntervalSince1970: Double(self.nowMs) / 1000) }

    /// Moves the clock `ms` milliseconds on (back, for a negative value).
    public func advance(ms: Int64) {
        self.current.withLock { $0 += ms }
    }

    /// Moves the clock `seconds` on.
    public func advance(seconds: Double) {
        self.advance(ms: Int64((seconds * 1000).rounded()))
    }

    /// Sets the clock to `date`.
    public func set(_ date: Date) {
        let ms = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        self.current.withLock { $0 = ms }
    }

    /// The libraries' clock type, reading this clock.
    public var wallClock: WallClock { WallClock { self.nowMs } }
}
