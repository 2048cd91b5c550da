#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The filter's one time type is milliseconds since 1970 (`Int64`): the engine, the state, the decision and event
// lines all carry it. Only the call side that mirrors CallKit (``CallProvider``, ``CallSnapshot``,
// ``IncomingCallPayload``) speaks `Date` and `TimeInterval`, as CallKit does; these are the only conversions
// between the two.

extension Date {
    /// The instant `milliseconds` after 1970.
    init(milliseconds: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(milliseconds: milliseconds))
    }

    /// Milliseconds since 1970, rounded down; a date made by ``init(milliseconds:)`` gives its milliseconds back
    /// exactly (`Date` counts seconds from 2001 in a `Double`, so 999 ms comes back as 998.999…: within a
    /// microsecond of a whole millisecond is that millisecond).
    var milliseconds: Int64 {
        let ms = self.timeIntervalSince1970 * 1000
        let nearest = ms.rounded()
        return Int64(abs(ms - nearest) < 0.001 ? nearest : ms.rounded(.down))
    }
}

extension TimeInterval {
    /// A duration of `milliseconds`, in seconds.
    init(milliseconds: Int64) {
        self = Double(milliseconds) / 1000
    }
}
