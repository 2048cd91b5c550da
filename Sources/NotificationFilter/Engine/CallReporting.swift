public import E2EECore

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Why the engine ends a call it had handed off.
public enum CallEndCause: Sendable, Hashable {
    /// A cancel arrived from the caller's side.
    case cancelled(CallCancelReason)
    /// The ring window passed without an answer.
    case unanswered
}

/// The engine's view of the call-reporting side (the part of a real app that talks to CallKit).
///
/// The engine decides BEFORE handing off (docs/FAILURE-MODES.md item 1): stale and duplicate invites never reach
/// ``handOff(_:)``; every call that does is reported by the reporter. Nor do invites the provider would refuse: the
/// engine asks ``admission()`` first and decides those as missed calls (``reportRefused(_:refusal:atMs:)``), so
/// every `ring` decision is a call that rings.
public protocol CallReporting: Sendable {
    /// The provider's rules with its live calls now, to decide whether an invite would ring before handing it off.
    func admission() async -> CallAdmission
    /// An invite the provider refuses (``admission()`` said so) was decided as a missed call: record it as missed
    /// (a `missed` event) instead of ringing.
    func reportRefused(_ handoff: FilterDecision.Handoff, refusal: IncomingCallError.Code, atMs: Int64) async
    /// A call that should ring now (`reportNewIncomingVoIPPushPayload`).
    func handOff(_ handoff: FilterDecision.Handoff) async
    /// A call handed off earlier ends.
    func endCall(account: String, callID: UUID, cause: CallEndCause, atMs: Int64) async
    /// After a restart: a call that was ringing before the crash and still is. The reporter restores it without
    /// announcing a second ring.
    func restoreRinging(_ handoff: FilterDecision.Handoff) async
}
