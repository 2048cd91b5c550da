import E2EECore

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// One call event, written as one JSON line with sorted keys.
///
/// Example: `{"account":"alice","at_ms":1000,"call_id":"6F2A…","display_name":"Bob","event":"ringing","handle":"bob"}`.
/// Absent optional fields are left out of the line. Keys are snake_case, as in every other line the tools write.
public struct CallEvent: Hashable, Sendable, Codable {
    /// The kind of event.
    public struct Kind: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The call was reported and rings.
        public static let ringing = Self(rawValue: "ringing")
        /// The user answered.
        public static let answered = Self(rawValue: "answered")
        /// The user declined the ringing call.
        public static let declined = Self(rawValue: "declined")
        /// The call ended (see the reason).
        public static let ended = Self(rawValue: "ended")
        /// The call rang and nobody answered: timed out, or the caller hung up first.
        public static let missed = Self(rawValue: "missed")
        /// Caller's side: a callee declined a call this user placed (a `declinedElsewhere` cancel from them for a
        /// call this device does not know as incoming); `by_user` and `by_device` say who. The app stops its
        /// outgoing ring.
        public static let remoteDeclined = Self(rawValue: "remote-declined")

        public var description: String { rawValue }

    }

    /// Why a call ended or never rang: a ``CallEndedReason`` (`unanswered`, `remoteEnded`, `answeredElsewhere`,
    /// `declined`…), or the provider's refusal code for a refused call's `missed` event (`maximumCallsReached`…).
    /// Written as its string.
    public enum Reason: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        case ended(CallEndedReason)
        case refused(FilterError.Code)

        /// A refusal code named by ``FilterError/Code`` is a refusal; any other string is an end reason.
        public init(rawValue: String) {
            let refusals: [FilterError.Code] = [
                .callUUIDAlreadyExists, .filteredByDoNotDisturb, .filteredByBlockList, .maximumCallsReached,
                .unentitled,
            ]
            if let refusal = refusals.first(where: { $0.rawValue == rawValue }) {
                self = .refused(refusal)
            } else {
                self = .ended(CallEndedReason(rawValue: rawValue))
            }
        }

        public var rawValue: String {
            switch self {
            case .ended(let reason): reason.rawValue
            case .refused(let code): code.rawValue
            }
        }

        public var description: String { self.rawValue }

        public init(from decoder: any Decoder) throws {
            self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(self.rawValue)
        }
    }

    public var event: Kind
    /// The call id, as an uppercase canonical UUID string.
    public var callID: String
    public var account: String
    public var reason: Reason?
    public var handle: String?
    public var displayName: String?
    /// `remote-declined`: the user id that declined.
    public var byUser: String?
    /// `remote-declined`: the device (in that user's device list) that declined.
    public var byDevice: String?
    /// When it happened, in milliseconds since 1970.
    public var atMs: Int64

    enum CodingKeys: String, CodingKey {
        case event, account, reason, handle
        case callID = "call_id"
        case displayName = "display_name"
        case byUser = "by_user"
        case byDevice = "by_device"
        case atMs = "at_ms"
    }

    public init(
        event: Kind,
        callID: UUID,
        account: String,
        reason: Reason? = nil,
        handle: String? = nil,
        displayName: String? = nil,
        byUser: String? = nil,
        byDevice: String? = nil,
        atMs: Int64
    ) {
        self.event = event
        self.callID = callID.uuidText
        self.account = account
        self.reason = reason
        self.handle = handle
        self.displayName = displayName
        self.byUser = byUser
        self.byDevice = byDevice
        self.atMs = atMs
    }

    /// The event as one JSON line with sorted keys, without the trailing newline.
    public func jsonLine() -> String {
        JSONLine.encode(self)
    }
}
