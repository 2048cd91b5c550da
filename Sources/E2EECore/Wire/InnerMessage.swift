#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The signed, encrypted inner message (docs/PROTOCOL.md, "Inner message").
///
/// Everything that says who, what and when lives here, inside the encryption: the relay and APNs see none of it.
public struct InnerMessage: Sendable, Hashable {
    public var messageID: MessageID
    /// Send time, milliseconds since the Unix epoch, as the sender's clock saw it.
    public var sentAtMs: UInt64
    /// The sender's user id (1-64 bytes of UTF-8).
    public var senderUserID: String
    /// The key id of the Ed25519 key that signs this message.
    public var senderSigningKeyID: KeyID
    public var content: MessageContent

    public init(
        messageID: MessageID,
        sentAtMs: UInt64,
        senderUserID: String,
        senderSigningKeyID: KeyID,
        content: MessageContent
    ) {
        self.messageID = messageID
        self.sentAtMs = sentAtMs
        self.senderUserID = senderUserID
        self.senderSigningKeyID = senderSigningKeyID
        self.content = content
    }

    public var kind: MessageKind { self.content.kind }

    static let maximumUserIDLength = 64

    // MARK: encoding

    /// The length of the signed inner message (signed part + signature) before padding: what must fit a padding
    /// bucket (docs/PROTOCOL.md §6). A sender uses it to say what is too large and by how much.
    ///
    /// - Throws: `.invalidArgument` or `.tooLarge` when the message cannot be encoded at all.
    public func encodedLength() throws(E2EEError) -> Int {
        var signedPart = try self.encodeSignedPart()
        defer { secureWipe(&signedPart) }
        return signedPart.count + Primitives.ed25519SignatureLength
    }

    /// The signed part: kind || message_id || sent_at_ms || sender_user_id (str8) || signing_key_id ||
    /// fields_length (u16) || fields.
    func encodeSignedPart() throws(E2EEError) -> [UInt8] {
        let userID = Array(self.senderUserID.utf8)
        guard (1...Self.maximumUserIDLength).contains(userID.count) else {
            throw E2EEError.invalidArgument("the sender user id must be 1-\(Self.maximumUserIDLength) bytes")
        }
        guard self.kind.rawValue != 0x00, self.kind.rawValue != 0xFF else {
            throw E2EEError.invalidArgument("message kinds 0x00 and 0xFF are invalid")
        }
        let fields = try Self.encodeFields(self.content)
        guard fields.count <= 0xffff else { throw E2EEError(.tooLarge, "the message fields exceed 65535 bytes") }
        var w = ByteWriter()
        w.u8(self.kind.rawValue)
        w.raw(self.messageID.bytes)
        w.u64(self.sentAtMs)
        try w.str8(self.senderUserID, field: "sender user id", allowEmpty: false)
        w.raw(self.senderSigningKeyID.bytes)
        w.u16(UInt16(fields.count))
        w.raw(fields)
        return w.bytes
    }

    static func encodeFields(_ content: MessageContent) throws(E2EEError) -> [UInt8] {
        var w = ByteWriter()
        switch content {
        case .callInvite(let invite):
            guard (1...3600).contains(invite.ringTimeoutSeconds) else {
                throw E2EEError.invalidArgument("the ring timeout must be 1-3600 seconds")
            }
            guard invite.groupParticipants.count <= 255, invite.customHeaders.count <= 255 else {
                throw E2EEError.invalidArgument("at most 255 group participants and 255 custom headers")
            }
            w.raw(uuidBytes(invite.callID))
            try w.str8(invite.callerHandle, field: "caller handle", allowEmpty: false)
            try w.str8(invite.displayName, field: "display name")
            w.u8(invite.hasVideo ? 0x01 : 0x00)
            w.u16(invite.ringTimeoutSeconds)
            w.u8(UInt8(invite.groupParticipants.count))
            for participant in invite.groupParticipants {
                try w.str8(participant, field: "group participant", allowEmpty: false)
            }
            w.u8(UInt8(invite.customHeaders.count))
            for name in invite.customHeaders.keys.sorted(by: { Array($0.utf8).lexicographicallyPrecedes($1.utf8) }) {
                try w.str8(name, field: "custom header name", allowEmpty: false)
                try w.str16(invite.customHeaders[name]!, field: "custom header value")
            }
        case .callCancel(let cancel):
            w.raw(uuidBytes(cancel.callID))
            w.u8(cancel.reason.rawValue)
        case .text(let text):
            try w.str8(text.threadID, field: "thread id")
            try w.str8(text.title, field: "title")
            try w.str16(text.body, field: "body")
        case .receipt(let receipt):
            guard (1...255).contains(receipt.messageIDs.count) else {
                throw E2EEError.invalidArgument("a receipt names 1-255 message ids")
            }
            w.u8(UInt8(receipt.messageIDs.count))
            for id in receipt.messageIDs { w.raw(id.bytes) }
        case .unknown(_, let fields):
            w.raw(fields)
        }
        return w.bytes
    }

    // MARK: decoding

    /// Decodes `signed_part || signature` (the unpadded plaintext). Returns the message, the signed part and the
    /// signature. Every failure is `.malformedMessage`.
    @_spi(Vectors)
    public static func decode(
        _ plaintext: [UInt8]
    ) throws(E2EEError) -> (InnerMessage, signedPart: [UInt8], signature: [UInt8]) {
        let signatureLength = Primitives.ed25519SignatureLength
        guard plaintext.count > signatureLength else { throw E2EEError.malformedMessage("too short") }
        let signedEnd = plaintext.count - signatureLength
        var r = ByteReader(plaintext, range: 0..<signedEnd, makeError: { E2EEError.malformedMessage($0) })
        let kind = MessageKind(rawValue: try r.u8("kind"))
        guard kind.rawValue != 0x00, kind.rawValue != 0xFF else { throw E2EEError.malformedMessage("invalid kind") }
        let messageID = try MessageID(bytes: r.take(16, "message id"))
        let sentAt = try r.u64("send time")
        let userID = try r.str8("sender user id", allowEmpty: false)
        guard userID.utf8.count <= maximumUserIDLength else {
            throw E2EEError.malformedMessage("sender user id too long")
        }
        let keyID = try KeyID(bytes: r.take(KeyID.length, "signing key id"))
        let fieldsLength = Int(try r.u16("fields length"))
        let fieldsStart = r.offset
        _ = try r.take(fieldsLength, "fields")
        try r.expectEnd("fields")
        let content = try decodeFields(kind: kind, plaintext, range: fieldsStart..<fieldsStart + fieldsLength)
        let message = InnerMessage(
            messageID: messageID,
            sentAtMs: sentAt,
            senderUserID: userID,
            senderSigningKeyID: keyID,
            content: content
        )
        return (message, Array(plaintext[0..<signedEnd]), Array(plaintext[signedEnd...]))
    }

    static func decodeFields(kind: MessageKind, _ bytes: [UInt8], range: Range<Int>) throws(E2EEError) -> MessageContent
    {
        var r = ByteReader(bytes, range: range, makeError: { E2EEError.malformedMessage($0) })
        let content: MessageContent
        switch kind {
        case .callInvite:
            let callID = uuid(try r.take(16, "call id"))
            let handle = try r.str8("caller handle", allowEmpty: false)
            let name = try r.str8("display name")
            let flags = try r.u8("flags")
            guard flags & 0xFE == 0 else { throw E2EEError.malformedMessage("reserved flag bits set") }
            let timeout = try r.u16("ring timeout")
            guard (1...3600).contains(timeout) else { throw E2EEError.malformedMessage("ring timeout out of range") }
            var participants: [String] = []
            for _ in 0..<Int(try r.u8("participant count")) {
                participants.append(try r.str8("group participant", allowEmpty: false))
            }
            var headers: [String: String] = [:]
            var previous: [UInt8]? = nil
            for _ in 0..<Int(try r.u8("header count")) {
                let name = try r.str8("custom header name", allowEmpty: false)
                // Names are strictly increasing: one canonical encoding, no duplicates.
                if let previous, !previous.lexicographicallyPrecedes(name.utf8) {
                    throw E2EEError.malformedMessage("custom headers not in canonical order")
                }
                previous = Array(name.utf8)
                headers[name] = try r.str16("custom header value")
            }
            content = .callInvite(
                CallInvite(
                    callID: callID,
                    callerHandle: handle,
                    displayName: name,
                    hasVideo: flags == 1,
                    ringTimeoutSeconds: timeout,
                    groupParticipants: participants,
                    customHeaders: headers
                )
            )
        case .callCancel:
            let callID = uuid(try r.take(16, "call id"))
            guard let reason = CallCancelReason(rawValue: try r.u8("cancel reason")) else {
                throw E2EEError.malformedMessage("unknown cancel reason")
            }
            content = .callCancel(CallCancel(callID: callID, reason: reason))
        case .text:
            content = .text(
                TextMessage(threadID: try r.str8("thread id"), title: try r.str8("title"), body: try r.str16("body"))
            )
        case .receipt:
            let count = Int(try r.u8("receipt count"))
            guard count >= 1 else { throw E2EEError.malformedMessage("empty receipt") }
            var ids: [MessageID] = []
            for _ in 0..<count { ids.append(try MessageID(bytes: r.take(16, "receipt message id"))) }
            content = .receipt(Receipt(messageIDs: ids))
        default:
            content = .unknown(kind: kind, fields: try r.take(r.remaining, "fields"))
        }
        try r.expectEnd("\(kind) fields")
        return content
    }
}

func uuidBytes(_ uuid: UUID) -> [UInt8] {
    withUnsafeBytes(of: uuid.uuid) { Array($0) }
}

func uuid(_ bytes: [UInt8]) -> UUID {
    precondition(bytes.count == 16)
    return UUID(
        uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
            bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
        )
    )
}
