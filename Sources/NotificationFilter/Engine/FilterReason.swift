public import E2EECore

/// Why a decision was made: a stable reason code (README "Reason codes" documents each).
///
/// Typed inside the filter and written as its string only at the edges (the decision line's `reason`, the
/// state's reason columns), through ``rawValue`` and ``init(rawValue:)``. A refused invite's reason carries the
/// provider's ``FilterError/Code`` (``refusal``) and an opening failure's reason carries its
/// ``E2EEError/Code`` (``openingError``): nothing reads them back out of the string. Equality is on the string.
public struct FilterReason: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The documented string, byte for byte as the decision line and the state carry it.
    public let rawValue: String
    /// The provider's refusal behind a `call-refused-…` reason; nil for any other reason.
    public let refusal: FilterError.Code?
    /// The opening error behind a reason spelled as one of the protocol's error codes; nil for any other reason.
    public let openingError: E2EEError.Code?

    private init(_ rawValue: String, refusal: FilterError.Code? = nil, openingError: E2EEError.Code? = nil) {
        self.rawValue = rawValue
        self.refusal = refusal
        self.openingError = openingError
    }

    /// The reason a stored or decoded string names: a known reason gets its typed code back; any other string is
    /// kept as it is (never a crash, never lost).
    public init(rawValue: String) {
        if let known = Self.known[rawValue] {
            self = known
        } else if rawValue.hasPrefix(Self.refusedPrefix) {
            self.init(
                rawValue,
                refusal: FilterError.Code(rawValue: String(rawValue.dropFirst(Self.refusedPrefix.count)))
            )
        } else {
            self.init(rawValue)
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.rawValue)
    }

    public var description: String { self.rawValue }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(self.rawValue) }

    public static let freshInvite = Self("fresh-invite")
    public static let text = Self("text")
    public static let inviteExpired = Self("invite-expired")
    public static let cancelledBeforeInvite = Self("cancelled-before-invite")
    public static let duplicateCall = Self("duplicate-call")
    public static let callCancelled = Self("call-cancelled")
    public static let cancelForUnknownCall = Self("cancel-before-invite")
    public static let cancelForEndedCall = Self("cancel-for-ended-call")
    /// A cancel for a known call from a user other than the one who invited: ignored, the call goes on.
    public static let cancelNotFromCaller = Self("cancel-not-from-caller")
    /// `silence`: another device of the account's own user answered the call (an `answeredElsewhere` cancel
    /// from it): the call ends (`ended` event, reason `answeredElsewhere`), no missed call. Also the decision of
    /// an invite whose call was answered elsewhere before it arrived: it never rings.
    public static let answeredElsewhere = Self("answered-elsewhere")
    /// `silence`: as ``answeredElsewhere``, for a decline on another device of the account's own user.
    public static let declinedElsewhere = Self("declined-elsewhere")
    /// `silence`: another device of the account's own user answered or declined a call this device already
    /// answered: the call goes on here.
    public static let cancelForAnsweredCall = Self("cancel-for-answered-call")
    /// `silence`: a `declinedElsewhere` cancel from another user for a call this device does not know as
    /// incoming: the callee declined a call this user placed (a `remote-declined` call event).
    public static let declinedByCallee = Self("declined-by-callee")
    /// `silence`: this device's own message to its own user, come back. A message to one's own user goes to every
    /// device of the list, the sending one included (docs/PROTOCOL.md §11.7: a submit that skipped it would name
    /// the sender), and the sending device silences its copy before any other rule: it never rings, alerts, or
    /// counts as a cancel.
    public static let ownEcho = Self("own-echo")
    public static let receipt = Self("receipt")
    public static let unknownKind = Self("unknown-kind")
    public static let replay = Self("replay")
    public static let clock = Self("clock")
    public static let stale = Self("stale")
    public static let malformedInput = Self("malformed-input")
    /// The sender is unknown: `fallback`, or `silence` by policy. It is the opening error of that name.
    public static let unknownSender = opening(.unknownSender)
    public static let callFiltered = Self("call-filtered")
    /// `fallback` of `e2ee-filter once` while the keys are locked: the payload is kept for `run` to decide later.
    public static let locked = Self("locked")
    /// `missed-call`: the call provider refused the invite (CallKit's `CXErrorCodeIncomingCallError`), one code
    /// per refusal, named after the provider's error code. The call never rang; it is recorded as missed.
    public static let callRefusedMaximumCallsReached = Self(
        "call-refused-maximum-calls-reached",
        refusal: .maximumCallsReached
    )
    public static let callRefusedDoNotDisturb = Self(
        "call-refused-filtered-by-do-not-disturb",
        refusal: .filteredByDoNotDisturb
    )
    public static let callRefusedBlockList = Self("call-refused-filtered-by-block-list", refusal: .filteredByBlockList)
    public static let callRefusedUnentitled = Self("call-refused-unentitled", refusal: .unentitled)

    /// The reason of a decision still being made (every rule sets its own): never written.
    static let undecided = Self("")

    private static let refusedPrefix = "call-refused-"

    /// The reason of a refused invite, carrying its code (nil for `callUUIDAlreadyExists`, which is a duplicate,
    /// not a refusal).
    public static func callRefused(_ code: FilterError.Code) -> Self? {
        switch code {
        case .maximumCallsReached: callRefusedMaximumCallsReached
        case .filteredByDoNotDisturb: callRefusedDoNotDisturb
        case .filteredByBlockList: callRefusedBlockList
        case .unentitled: callRefusedUnentitled
        case .callUUIDAlreadyExists: nil
        default: Self(refusedPrefix + code.rawValue, refusal: code)
        }
    }

    /// The reason of a payload that could not be opened: every code of opening is also a reason, spelled as the
    /// protocol spells it (docs/PROTOCOL.md §10): too-large, malformed-envelope, foreign-payload,
    /// unsupported-version, unsupported-suite, unknown-recipient-key, open-failed, malformed-message,
    /// unknown-sender, bad-signature.
    public static func opening(_ code: E2EEError.Code) -> Self {
        Self(code.rawValue, openingError: code)
    }

    /// Every documented reason with a typed code behind it, by its string: what ``init(rawValue:)`` gives back.
    /// (Another code of opening, if one ever decides, reads back as a reason without its typed code.)
    private static let known: [String: Self] = {
        let openingCodes: [E2EEError.Code] = [
            .tooLarge, .malformedEnvelope, .foreignPayload, .unsupportedVersion, .unsupportedSuite,
            .unknownRecipientKey, .openFailed, .malformedMessage, .unknownSender, .badSignature,
        ]
        let refusals = [
            callRefusedMaximumCallsReached, callRefusedDoNotDisturb, callRefusedBlockList, callRefusedUnentitled,
        ]
        var known: [String: Self] = [:]
        for reason in openingCodes.map(opening) + refusals { known[reason.rawValue] = reason }
        return known
    }()
}
