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
    func reportRefused(_ handoff: FilterDecision.Handoff, refusal: FilterError.Code, atMs: Int64) async
    /// A call that should ring now (`reportNewIncomingVoIPPushPayload`).
    func handOff(_ handoff: FilterDecision.Handoff) async
    /// A call handed off earlier ends.
    func endCall(account: String, callID: UUID, cause: CallEndCause, atMs: Int64) async
    /// After a restart: a call that was ringing before the crash and still is. The reporter restores it without
    /// announcing a second ring.
    func restoreRinging(_ handoff: FilterDecision.Handoff) async
    /// The user answered or declined a ringing call (CallKit's `CXAnswerCallAction` / `CXEndCallAction`),
    /// recorded in the state by ``FilterEngine/perform(_:callID:account:)``. A call the provider does not know
    /// (after a restart) is restored first, without a second `ringing` event.
    func apply(_ action: CallUserAction, _ handoff: FilterDecision.Handoff) async
    /// Caller's side: a callee (`byUser`, device `byDevice`) declined the call `callID` this user placed.
    func reportRemoteDeclined(account: String, callID: UUID, byUser: String, byDevice: String?, atMs: Int64) async

    /// The engine is about to report a batch's calls: the events they cause may be held and recorded together at
    /// ``endEventBatch()`` (``CallEventSink/beginBatch()``). The engine settles nothing in the state that depends
    /// on those events being recorded before it has called ``endEventBatch()``.
    func beginEventBatch()

    /// Records the events held since ``beginEventBatch()``.
    func endEventBatch()
}

extension CallReporting {
    /// Events are recorded as they come.
    public func beginEventBatch() {}

    /// Nothing is held.
    public func endEventBatch() {}
}

/// What the user does with a ringing call, from the CLI (`e2ee-filter answer` / `decline`).
public enum CallUserAction: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `CXAnswerCallAction`: ringing → active (`answered` event); the other devices get `answeredElsewhere`.
    case answer
    /// `CXEndCallAction` on a ringing call: ringing → ended (`declined` event); the other devices and the caller
    /// get `declinedElsewhere`.
    case decline

    public var description: String { self.rawValue }
}
