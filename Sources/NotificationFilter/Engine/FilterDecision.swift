#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What the filter makes of one payload. Exactly one per input.
public struct FilterDecision: Sendable, Hashable, Codable {
    /// The five outcomes (README "Decisions").
    public struct Action: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { self.rawValue }
        /// Handed to the call reporter, which rings; the notification itself is silenced.
        public static let ring = Action(rawValue: "ring")
        /// Shown: the decrypted title and body.
        public static let alert = Action(rawValue: "alert")
        /// Shown: an alert naming the caller of a call that will not ring.
        public static let missedCall = Action(rawValue: "missed-call")
        /// Not shown (filtering entitlement: empty content).
        public static let silence = Action(rawValue: "silence")
        /// Shown: a generic alert that never carries ciphertext or the placeholder.
        public static let fallback = Action(rawValue: "fallback")
    }

    /// The alert text shown for `alert`, `missed-call` and `fallback`.
    public struct Alert: Sendable, Hashable, Codable {
        public var title: String
        public var subtitle: String?
        public var body: String
        public var threadID: String?
        enum CodingKeys: String, CodingKey {
            case title, subtitle, body
            case threadID = "thread_id"
        }
    }

    /// What the call reporter gets for `ring` (mirrors what `reportNewIncomingVoIPPushPayload` carries).
    public struct Handoff: Sendable, Hashable, Codable {
        public var callID: UUID
        public var callerHandle: String
        public var displayName: String
        public var hasVideo: Bool
        public var account: String
        public var ringDeadlineMs: Int64
        public var groupParticipants: [String]?
        enum CodingKeys: String, CodingKey {
            case callID = "call_id"
            case callerHandle = "caller_handle"
            case displayName = "display_name"
            case hasVideo = "has_video"
            case account
            case ringDeadlineMs = "ring_deadline_ms"
            case groupParticipants = "group_participants"
        }
    }

    /// The input's sequence number (the spool's `seq`, or the input line number).
    public var seq: Int64
    /// The input's `apns-id`, when it had one.
    public var apnsID: String?
    public var decision: Action
    /// A stable reason code (README "Reason codes").
    public var reason: String
    /// The message kind when known (after decryption).
    public var kind: String?
    /// The account the payload belongs to, when known.
    public var account: String?
    /// The message id, when known.
    public var messageID: String?
    /// The device id (in the sender's device list) of the device that sent an opened message.
    public var senderDevice: String?
    public var callID: UUID?
    public var alert: Alert?
    public var handoff: Handoff?

    enum CodingKeys: String, CodingKey {
        case seq, decision, reason, kind, account, alert, handoff
        case apnsID = "apns_id"
        case messageID = "message_id"
        case callID = "call_id"
        case senderDevice = "sender_device"
    }

    public init(seq: Int64, apnsID: String?, decision: Action, reason: String) {
        self.seq = seq
        self.apnsID = apnsID
        self.decision = decision
        self.reason = reason
    }

    /// One JSON line, keys sorted, no trailing newline.
    public func jsonLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try! encoder.encode(self), as: UTF8.self)
    }

    /// The generic alert of every fallback: useful, never ciphertext, never the placeholder.
    public static let fallbackAlert = Alert(
        title: "New notification",
        subtitle: nil,
        body: "Something arrived that this device could not show. Open the app to see it.",
        threadID: nil
    )
}

/// The reason codes of decisions (stable strings; README "Reason codes" documents each).
public enum FilterReason: Sendable {
    public static let freshInvite = "fresh-invite"
    public static let text = "text"
    public static let inviteExpired = "invite-expired"
    public static let cancelledBeforeInvite = "cancelled-before-invite"
    public static let duplicateCall = "duplicate-call"
    public static let callCancelled = "call-cancelled"
    public static let cancelForUnknownCall = "cancel-before-invite"
    public static let cancelForEndedCall = "cancel-for-ended-call"
    /// A cancel for a known call from a user other than the one who invited: ignored, the call goes on.
    public static let cancelNotFromCaller = "cancel-not-from-caller"
    /// `silence`: another device of the account's own user answered the call (an `answeredElsewhere` cancel
    /// from it): the call ends (`ended` event, reason `answeredElsewhere`), no missed call. Also the decision of
    /// an invite whose call was answered elsewhere before it arrived: it never rings.
    public static let answeredElsewhere = "answered-elsewhere"
    /// `silence`: as ``answeredElsewhere``, for a decline on another device of the account's own user.
    public static let declinedElsewhere = "declined-elsewhere"
    /// `silence`: another device of the account's own user answered or declined a call this device already
    /// answered: the call goes on here.
    public static let cancelForAnsweredCall = "cancel-for-answered-call"
    /// `silence`: a `declinedElsewhere` cancel from another user for a call this device does not know as
    /// incoming: the callee declined a call this user placed (a `remote-declined` call event).
    public static let declinedByCallee = "declined-by-callee"
    public static let receipt = "receipt"
    public static let unknownKind = "unknown-kind"
    public static let replay = "replay"
    public static let clock = "clock"
    public static let stale = "stale"
    public static let malformedInput = "malformed-input"
    public static let unknownSender = "unknown-sender"
    public static let callFiltered = "call-filtered"
    /// `missed-call`: the call provider refused the invite (CallKit's `CXErrorCodeIncomingCallError`), one code
    /// per refusal, named after the provider's error code. The call never rang; it is recorded as missed.
    public static let callRefusedMaximumCallsReached = "call-refused-maximum-calls-reached"
    public static let callRefusedDoNotDisturb = "call-refused-filtered-by-do-not-disturb"
    public static let callRefusedBlockList = "call-refused-filtered-by-block-list"
    public static let callRefusedUnentitled = "call-refused-unentitled"

    /// The reason code of a refused invite (nil for `callUUIDAlreadyExists`, which is a duplicate, not a refusal).
    public static func callRefused(_ code: IncomingCallError.Code) -> String? {
        switch code {
        case .maximumCallsReached: callRefusedMaximumCallsReached
        case .filteredByDoNotDisturb: callRefusedDoNotDisturb
        case .filteredByBlockList: callRefusedBlockList
        case .unentitled: callRefusedUnentitled
        case .callUUIDAlreadyExists: nil
        default: "call-refused-\(code.rawValue)"
        }
    }

    /// The provider's refusal code behind a `call-refused-…` reason (nil for any other reason).
    static func refusalCode(ofReason reason: String) -> IncomingCallError.Code? {
        let known: [IncomingCallError.Code] = [
            .maximumCallsReached, .filteredByDoNotDisturb, .filteredByBlockList, .unentitled,
        ]
        if let code = known.first(where: { callRefused($0) == reason }) { return code }
        let prefix = "call-refused-"
        return reason.hasPrefix(prefix) ? IncomingCallError.Code(rawValue: String(reason.dropFirst(prefix.count))) : nil
    }
    // Every E2EEError code of opening is also a reason: too-large, malformed-envelope, foreign-payload,
    // unsupported-version, unsupported-suite, unknown-recipient-key, open-failed, malformed-message, bad-signature.
}
