#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A live call as the provider holds it: ringing or answered.
public struct CallSnapshot: Hashable, Sendable {
    /// Where a live call is in its life.
    public struct State: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Reported and ringing, not answered yet.
        public static let ringing = Self(rawValue: "ringing")
        /// Answered.
        public static let active = Self(rawValue: "active")

        public var description: String { rawValue }
    }

    public var uuid: UUID
    /// The update as shown: `hasVideo` is false when the provider does not support video.
    public var update: CallUpdate
    public var state: State
    /// When a ringing call stops ringing as unanswered; nil once answered.
    public var ringDeadline: Date?
}

/// How one handoff went, returned by ``CallReporter/reportNewIncomingVoIPPushPayload(_:)``.
public struct HandoffOutcome: Hashable, Sendable {
    /// Whether the provider was asked to report the call (always true: the reporter's invariant).
    public var reported: Bool
    /// Whether the call is ringing after the handoff.
    public var ringing: Bool
    /// Why the provider refused the call, if it did (the report still counts).
    public var refusal: FilterError.Code?
    /// The reason the call was ended right after its report, for a stale handoff.
    public var endedAtOnce: CallEndedReason?

    public init(reported: Bool, ringing: Bool, refusal: FilterError.Code?, endedAtOnce: CallEndedReason?) {
        self.reported = reported
        self.ringing = ringing
        self.refusal = refusal
        self.endedAtOnce = endedAtOnce
    }
}

/// The reporter's counters: every handoff must be reported, so `violations` stays zero.
public struct HandoffCounters: Hashable, Sendable {
    /// Handoffs received.
    public var handoffs: Int
    /// Calls to the provider's `reportNewIncomingCall` (accepted or refused).
    public var reports: Int
    /// Handoffs that completed without a report: what iOS would terminate the app for.
    public var violations: Int

    public init(handoffs: Int, reports: Int, violations: Int) {
        self.handoffs = handoffs
        self.reports = reports
        self.violations = violations
    }
}
