import PushTransport

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
    /// A stable reason code (README "Reason codes"), written as its string.
    public var reason: FilterReason
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

    public init(seq: Int64, apnsID: String?, decision: Action, reason: FilterReason) {
        self.seq = seq
        self.apnsID = apnsID
        self.decision = decision
        self.reason = reason
    }

    /// One JSON line, keys sorted, no trailing newline: byte for byte what `JSONEncoder` with `[.sortedKeys,
    /// .withoutEscapingSlashes]` writes (tested against it), in one pass, as every decision is logged.
    public func jsonLine() -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(256)
        var top = JSONMembers()
        // The keys in UTF-8 byte order.
        if let account = self.account { top.string("account", account, &out) }
        if let alert = self.alert {
            top.key("alert", &out)
            out.append(UInt8(ascii: "{"))
            var inner = JSONMembers()
            inner.string("body", alert.body, &out)
            if let subtitle = alert.subtitle { inner.string("subtitle", subtitle, &out) }
            if let threadID = alert.threadID { inner.string("thread_id", threadID, &out) }
            inner.string("title", alert.title, &out)
            out.append(UInt8(ascii: "}"))
        }
        if let apnsID = self.apnsID { top.string("apns_id", apnsID, &out) }
        if let callID = self.callID { top.string("call_id", callID.uuidText, &out) }
        top.string("decision", self.decision.rawValue, &out)
        if let handoff = self.handoff {
            top.key("handoff", &out)
            out.append(UInt8(ascii: "{"))
            var inner = JSONMembers()
            inner.string("account", handoff.account, &out)
            inner.string("call_id", handoff.callID.uuidText, &out)
            inner.string("caller_handle", handoff.callerHandle, &out)
            inner.string("display_name", handoff.displayName, &out)
            if let participants = handoff.groupParticipants {
                inner.key("group_participants", &out)
                out.append(UInt8(ascii: "["))
                for (index, participant) in participants.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    JSONText.appendString(participant, to: &out)
                }
                out.append(UInt8(ascii: "]"))
            }
            inner.literal("has_video", handoff.hasVideo ? "true" : "false", &out)
            inner.literal("ring_deadline_ms", String(handoff.ringDeadlineMs), &out)
            out.append(UInt8(ascii: "}"))
        }
        if let kind = self.kind { top.string("kind", kind, &out) }
        if let messageID = self.messageID { top.string("message_id", messageID, &out) }
        top.string("reason", self.reason.rawValue, &out)
        if let senderDevice = self.senderDevice { top.string("sender_device", senderDevice, &out) }
        top.literal("seq", String(self.seq), &out)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The generic alert of every fallback: useful, never ciphertext, never the placeholder.
    public static let fallbackAlert = Alert(
        title: "New notification",
        subtitle: nil,
        body: "Something arrived that this device could not show. Open the app to see it.",
        threadID: nil
    )
}
