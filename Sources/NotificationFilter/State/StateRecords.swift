public import E2EECore

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The lifecycle state of a call as the filter remembers it.
public struct StoredCallState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Handed to the call reporter and ringing.
    public static let ringing = Self(rawValue: "ringing")
    /// Answered and in progress.
    public static let active = Self(rawValue: "active")
    /// Over, with an end reason.
    public static let ended = Self(rawValue: "ended")
    /// Never answered: too old to ring, cancelled while ringing, or timed out.
    public static let missed = Self(rawValue: "missed")

    public var description: String { rawValue }
}

/// What the store remembers about one call of one account.
public struct CallStateRecord: Hashable, Sendable {
    public var account: String
    public var callID: UUID
    public var state: StoredCallState
    public var updatedAtMs: Int64
    /// Why the call ended or never rang, if it did.
    public var endReason: CallRecordReason?
    /// The user id that sent the invite: only this user's cancel ends the call. Nil when not known (a call stored
    /// before schema version 3); writing nil keeps the caller already stored.
    public var callerUserID: String?

    public init(
        account: String,
        callID: UUID,
        state: StoredCallState,
        updatedAtMs: Int64,
        endReason: CallRecordReason? = nil,
        callerUserID: String? = nil
    ) {
        self.account = account
        self.callID = callID
        self.state = state
        self.updatedAtMs = updatedAtMs
        self.endReason = endReason
        self.callerUserID = callerUserID
    }
}

/// A cancel that arrived before its invite (pushes are not ordered).
public struct EarlyCancelRecord: Hashable, Sendable {
    public var account: String
    public var callID: UUID
    /// The cancel's reason.
    public var reason: CallEndedReason
    public var atMs: Int64
    /// The user id that sent the cancel; it cancels only an invite from the same user. Nil when not known (a
    /// cancel stored before schema version 3), which matches any caller.
    public var senderUserID: String?

    public init(account: String, callID: UUID, reason: CallEndedReason, atMs: Int64, senderUserID: String? = nil) {
        self.account = account
        self.callID = callID
        self.reason = reason
        self.atMs = atMs
        self.senderUserID = senderUserID
    }
}

/// One entry of the missed-call log.
public struct MissedCallRecord: Hashable, Sendable {
    public var account: String
    public var callID: UUID
    public var callerHandle: String?
    public var displayName: String?
    public var atMs: Int64
    /// Why the call was missed: the invite's decision reason, or how the ringing call ended.
    public var reason: CallRecordReason

    public init(
        account: String,
        callID: UUID,
        callerHandle: String?,
        displayName: String?,
        atMs: Int64,
        reason: CallRecordReason
    ) {
        self.account = account
        self.callID = callID
        self.callerHandle = callerHandle
        self.displayName = displayName
        self.atMs = atMs
        self.reason = reason
    }
}

/// Why a call in the state ended or never rang, as its end reason and its missed-call record keep it: the
/// decision's reason (`invite-expired`, `cancelled-before-invite`, `call-refused-…`, `answered-elsewhere`…), or how
/// the call ended (a cancel's reason, `unanswered`, `declined`). Stored as its string; read back with
/// ``init(rawValue:)``, which keeps any string it does not know.
public enum CallRecordReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    case decision(FilterReason)
    case ended(CallEndedReason)

    /// A ``CallEndedReason`` name is an end; any other string is a decision's reason.
    public init(rawValue: String) {
        if let ended = CallEndedReason.known.first(where: { $0.rawValue == rawValue }) {
            self = .ended(ended)
        } else {
            self = .decision(FilterReason(rawValue: rawValue))
        }
    }

    public var rawValue: String {
        switch self {
        case .decision(let reason): reason.rawValue
        case .ended(let reason): reason.rawValue
        }
    }

    public var description: String { self.rawValue }

    /// The provider's refusal, for an invite the provider refused.
    public var refusal: FilterError.Code? {
        if case .decision(let reason) = self { reason.refusal } else { nil }
    }

    /// The cancel that ended the call, if a cancel did.
    public var cancelReason: CallCancelReason? {
        if case .ended(let reason) = self { reason.cancelReason } else { nil }
    }
}

/// How far the daemon has read one spool file.
public struct SpoolProgress: Hashable, Sendable {
    /// The byte offset just past the last input line that was decided.
    public var byteOffset: Int64
    /// The sequence number of that input.
    public var lastSeq: Int64

    public init(byteOffset: Int64, lastSeq: Int64) {
        self.byteOffset = byteOffset
        self.lastSeq = lastSeq
    }
}

/// A payload kept while the keys are locked, to be decided after unlock.
public struct PendingPayload: Hashable, Sendable {
    public var seq: Int64
    public var payload: String
    public var enqueuedAtMs: Int64

    public init(seq: Int64, payload: String, enqueuedAtMs: Int64) {
        self.seq = seq
        self.payload = payload
        self.enqueuedAtMs = enqueuedAtMs
    }
}
