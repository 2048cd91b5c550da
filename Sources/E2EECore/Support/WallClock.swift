#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The wall clock, the one type every library takes for "now" (a signed send time, a token's age, a ring timeout,
/// a lease): milliseconds since 1970, read through one closure so a test fixes or advances it (TestSupport's
/// `TestClock`) and nothing sleeps.
///
/// The protocol's times are milliseconds since 1970 (docs/PROTOCOL.md: `sent_at_ms`, `issued_at_ms`), so that is
/// what the clock reads; ``date`` and ``unsignedMs`` are the same instant for APIs that want a `Date` (JWT `iat`)
/// or the wire's unsigned field.
public struct WallClock: Sendable {
    private let read: @Sendable () -> Int64

    /// A clock that reads `milliseconds` (since 1970) each time it is asked.
    public init(_ milliseconds: @escaping @Sendable () -> Int64) {
        self.read = milliseconds
    }

    /// The system's real-time clock.
    public static let system = WallClock { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// A clock that always reads `milliseconds`.
    public static func fixed(_ milliseconds: Int64) -> WallClock { WallClock { milliseconds } }

    /// Now, in milliseconds since 1970.
    public var nowMs: Int64 { self.read() }

    /// Now, in milliseconds since 1970, as the wire's unsigned fields carry it (an instant before 1970 reads 0).
    public var unsignedMs: UInt64 { UInt64(max(0, self.read())) }

    /// Now, as a `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(self.read()) / 1000) }
}
