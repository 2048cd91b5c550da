public import E2EECore

/// What the system should show for an incoming call, like CallKit's `CXCallUpdate`.
public struct CallUpdate: Hashable, Sendable {
    /// Who is calling.
    public var remoteHandle: CallHandle
    /// The caller's name as the sender's signed payload gave it, if any.
    public var localizedCallerName: String?
    /// Whether the caller offers video.
    public var hasVideo: Bool
    /// The local account the call is for.
    public var account: String
    /// The other participants of a group call (empty for a one-to-one call).
    public var groupParticipants: [String]
    /// Extra application headers carried with the call.
    public var customHeaders: [String: String]

    public init(
        remoteHandle: CallHandle,
        localizedCallerName: String? = nil,
        hasVideo: Bool = false,
        account: String,
        groupParticipants: [String] = [],
        customHeaders: [String: String] = [:]
    ) {
        self.remoteHandle = remoteHandle
        self.localizedCallerName = localizedCallerName
        self.hasVideo = hasVideo
        self.account = account
        self.groupParticipants = groupParticipants
        self.customHeaders = customHeaders
    }
}

/// Why a call ended, as reported by the app (CallKit's `CXCallEndedReason`) or by a user action.
///
/// Extensible: new reasons can be added without breaking callers.
public struct CallEndedReason: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The call failed (an error while connecting, or a handoff that could not ring).
    public static let failed = Self(rawValue: "failed")
    /// The caller hung up.
    public static let remoteEnded = Self(rawValue: "remoteEnded")
    /// Nobody answered before the ring timed out.
    public static let unanswered = Self(rawValue: "unanswered")
    /// Another device of the account answered.
    public static let answeredElsewhere = Self(rawValue: "answeredElsewhere")
    /// Another device of the account declined.
    public static let declinedElsewhere = Self(rawValue: "declinedElsewhere")
    /// The local user declined the ringing call (user action, not a CallKit reported reason).
    public static let declined = Self(rawValue: "declined")
    /// The local user hung up (user action, not a CallKit reported reason).
    public static let localEnded = Self(rawValue: "localEnded")

    public var description: String { rawValue }
}

extension CallEndedReason {
    /// The end reason of a cancel: the same name (CallKit's `CXCallEndedReason`).
    public init(_ cancel: CallCancelReason) {
        switch cancel {
        case .remoteEnded: self = .remoteEnded
        case .answeredElsewhere: self = .answeredElsewhere
        case .declinedElsewhere: self = .declinedElsewhere
        }
    }

    /// The cancel reason this end reason is (nil for `unanswered`, `declined` and the others no cancel carries).
    public var cancelReason: CallCancelReason? {
        switch self {
        case .remoteEnded: .remoteEnded
        case .answeredElsewhere: .answeredElsewhere
        case .declinedElsewhere: .declinedElsewhere
        default: nil
        }
    }

    /// Every end reason named here, for reading a stored one back.
    static let known: [CallEndedReason] = [
        .failed, .remoteEnded, .unanswered, .answeredElsewhere, .declinedElsewhere, .declined, .localEnded,
    ]
}
