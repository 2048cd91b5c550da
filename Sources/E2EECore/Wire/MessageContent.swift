#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The kind of an inner message: one byte on the wire (docs/PROTOCOL.md, "Kinds").
///
/// 0x01-0x04 are defined by protocol version 1. 0x05-0x7F are reserved for future kinds of this specification,
/// 0x80-0xFE for application-specific kinds; 0x00 and 0xFF are invalid. A receiver that does not know a kind
/// still verifies the signature and treats the message as a non-alert (it is never shown).
public struct MessageKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let callInvite = MessageKind(rawValue: 0x01)
    public static let callCancel = MessageKind(rawValue: 0x02)
    public static let text = MessageKind(rawValue: 0x03)
    public static let receipt = MessageKind(rawValue: 0x04)

    /// The documented name: `call-invite`, `call-cancel`, `text`, `receipt`, or `kind-0xNN`.
    public var description: String {
        switch self {
        case .callInvite: "call-invite"
        case .callCancel: "call-cancel"
        case .text: "text"
        case .receipt: "receipt"
        default: "kind-0x" + Hex.encode([self.rawValue])
        }
    }
}

/// A call invitation: the callee's device should ring.
public struct CallInvite: Sendable, Hashable {
    public var callID: UUID
    /// The caller's handle as CallKit would show it (a user id, a phone number, an address). 1-255 bytes.
    public var callerHandle: String
    /// The caller's display name, 0-255 bytes.
    public var displayName: String
    public var hasVideo: Bool
    /// How long the callee may ring, in seconds (1-3600), counted from the signed send time.
    public var ringTimeoutSeconds: UInt16
    /// Other participants of a group call (handles, each 1-255 bytes), at most 255.
    public var groupParticipants: [String]
    /// Application headers (name 1-255 bytes, value 0-65535 bytes), at most 255, encoded sorted by name.
    public var customHeaders: [String: String]

    public init(
        callID: UUID,
        callerHandle: String,
        displayName: String,
        hasVideo: Bool,
        ringTimeoutSeconds: UInt16,
        groupParticipants: [String] = [],
        customHeaders: [String: String] = [:]
    ) {
        self.callID = callID
        self.callerHandle = callerHandle
        self.displayName = displayName
        self.hasVideo = hasVideo
        self.ringTimeoutSeconds = ringTimeoutSeconds
        self.groupParticipants = groupParticipants
        self.customHeaders = customHeaders
    }
}

/// Why a call was cancelled: one byte on the wire.
public enum CallCancelReason: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case remoteEnded = 1
    case answeredElsewhere = 2
    case declinedElsewhere = 3

    public var description: String {
        switch self {
        case .remoteEnded: "remoteEnded"
        case .answeredElsewhere: "answeredElsewhere"
        case .declinedElsewhere: "declinedElsewhere"
        }
    }
}

/// The cancellation of a call: stop ringing.
public struct CallCancel: Sendable, Hashable {
    public var callID: UUID
    public var reason: CallCancelReason
    public init(callID: UUID, reason: CallCancelReason) {
        self.callID = callID
        self.reason = reason
    }
}

/// A text message to show.
public struct TextMessage: Sendable, Hashable {
    /// The conversation id (0-255 bytes).
    public var threadID: String
    /// 0-255 bytes.
    public var title: String
    /// 0-65535 bytes (bounded in practice by the largest padding bucket).
    public var body: String
    public init(threadID: String, title: String, body: String) {
        self.threadID = threadID
        self.title = title
        self.body = body
    }
}

/// A delivery/read receipt for earlier messages: never shown.
public struct Receipt: Sendable, Hashable {
    /// 1-255 message ids of 16 bytes each.
    public var messageIDs: [MessageID]
    public init(messageIDs: [MessageID]) { self.messageIDs = messageIDs }
}

/// The kind-specific content of an inner message.
public enum MessageContent: Sendable, Hashable {
    case callInvite(CallInvite)
    case callCancel(CallCancel)
    case text(TextMessage)
    case receipt(Receipt)
    /// A kind this implementation does not know; its fields are kept opaque (they were signed).
    case unknown(kind: MessageKind, fields: [UInt8])

    public var kind: MessageKind {
        switch self {
        case .callInvite: .callInvite
        case .callCancel: .callCancel
        case .text: .text
        case .receipt: .receipt
        case .unknown(let kind, _): kind
        }
    }
}

/// A 128-bit message id (random per message; the replay key).
public struct MessageID: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]
    public init(bytes: some Collection<UInt8>) throws(E2EEError) {
        let array = Array(bytes)
        guard array.count == 16 else { throw E2EEError.invalidArgument("a message id is 16 bytes") }
        self.bytes = array
    }
    /// A fresh random id.
    public static func random() -> MessageID { try! MessageID(bytes: Primitives.randomBytes(16)) }
    public var hex: String { Hex.encode(self.bytes) }
    public var description: String { self.hex }
}
