public import E2EECore
public import Foundation

/// A push ready to go: the APNs request and what it carries (for the caller's own records, never sent in clear).
public struct BuiltPush: Sendable {
    public let request: APNsRequest
    public let messageID: MessageID
    public let kind: MessageKind
    /// The padding bucket of the body (see docs/PROTOCOL.md §6).
    public let bucket: Int
}

/// Builds APNs requests that look the same for every kind of message.
///
/// Uniform by construction: the headers come from one function that does not know the kind
/// (`apns-push-type: alert`, `apns-priority: 10`, `apns-expiration: 0`, the app's bundle id as topic, no
/// collapse id, a fresh `apns-id`), and the body is always the placeholder alert plus the padded envelope, so a call
/// invite, a cancel, a receipt and a text of up to about 1 KB produce bodies of exactly the same length.
///
/// `apns-expiration: 0` ("deliver now or never") is the single policy for every kind: a push is a wake-up; an app
/// fetches what it missed from its own server. A per-kind policy would tell APNs which pushes are calls.
public struct PushBuilder: Sendable {
    public let identity: Identity
    /// The app's bundle id (`apns-topic`) for every push, overriding the recipient card's `push.topic`; `nil`
    /// takes each card's topic.
    public let topic: String?
    /// The wall clock, in milliseconds since the epoch, for the signed send time.
    public let nowMs: @Sendable () -> UInt64

    /// - Parameters:
    ///   - identity: the sender.
    ///   - topic: an `apns-topic` for every push (`--topic`); `nil` (the default) uses the recipient card's
    ///     `push.topic`, which is the bundle id the device registered its token for.
    ///   - nowMs: the clock for the signed send time.
    public init(
        identity: Identity,
        topic: String? = nil,
        nowMs: @escaping @Sendable () -> UInt64 = PushBuilder.systemNowMs
    ) {
        self.identity = identity
        self.topic = topic
        self.nowMs = nowMs
    }

    /// The system clock in milliseconds.
    public static let systemNowMs: @Sendable () -> UInt64 = { UInt64(Date().timeIntervalSince1970 * 1000) }

    /// The headers every push carries, whatever its kind. Only `apns-id` differs between requests.
    public static func uniformHeaders(topic: String, apnsID: UUID = UUID()) -> [String: String] {
        [
            "apns-push-type": "alert",
            "apns-priority": "10",
            "apns-expiration": "0",
            "apns-topic": topic,
            "apns-id": apnsID.uuidString.lowercased(),
        ]
    }

    /// Checks a device token: hex digits, an even count, 16 to 200 of them (32 bytes in practice; Apple says not to
    /// assume a length). The error names the rule the token breaks.
    public static func validateDeviceToken(_ token: String) throws(SenderError) -> String {
        let lower = token.lowercased()
        let count = lower.utf8.count
        let rule = "an APNs device token is 16 to 200 hex digits, an even count (64 for today's 32-byte tokens)"
        if let bad = lower.unicodeScalars.firstIndex(where: { !"0123456789abcdef".unicodeScalars.contains($0) }) {
            let position = lower.unicodeScalars.distance(from: lower.unicodeScalars.startIndex, to: bad) + 1
            throw SenderError(.badDeviceToken, "\(rule); character \(position) is not a hex digit")
        }
        guard count >= 16 else { throw SenderError(.badDeviceToken, "\(rule); got only \(count) digits") }
        guard count <= 200 else { throw SenderError(.badDeviceToken, "\(rule); got \(count) digits") }
        guard count % 2 == 0 else { throw SenderError(.badDeviceToken, "\(rule); got an odd count (\(count))") }
        return lower
    }

    /// Seals `content` for `card`'s current device key and wraps it in an APNs request.
    ///
    /// - Parameters:
    ///   - content: what to send.
    ///   - card: the recipient's contact card.
    ///   - deviceToken: the device token; defaults to the card's `push.device_token`.
    ///   - messageID: the message id (random by default).
    ///   - sentAtMs: for tests and demos: the signed send time, in milliseconds since the epoch; a receiver judges
    ///     staleness from it. `nil` (the default) signs the builder's clock (``nowMs``).
    /// - Returns: the request to send and what it carries.
    ///   - topic: the `apns-topic` of this push; default: the builder's ``topic``, then the card's `push.topic`.
    /// - Throws: `SenderError` with `.unknownRecipient` (no current key, no token or no topic), `.badDeviceToken`,
    ///   `.tooLarge` (saying what is too large for that kind) or `.usage` (a field out of range).
    public func build(
        _ content: MessageContent,
        to card: DeviceList,
        device deviceID: String? = nil,
        deviceToken: String? = nil,
        messageID: MessageID = .random(),
        sentAtMs: UInt64? = nil,
        topic: String? = nil
    ) throws(SenderError) -> BuiltPush {
        guard
            let device = deviceID.map({ card.device(named: $0) })
                ?? card.devices.first(where: {
                    card.userID != self.identity.userID || $0.signingKey != self.identity.signingKey.publicKey
                })
        else {
            throw SenderError(.unknownRecipient, "\(card.userID) has no such device")
        }
        guard let token = deviceToken ?? device.push?.deviceToken else {
            throw SenderError(
                .unknownRecipient,
                "no device token for \(card.userID): pass --device-token or use a card with \"push\".\"device_token\""
            )
        }
        let validToken = try Self.validateDeviceToken(token)
        guard let topic = topic ?? self.topic ?? device.push?.topic, !topic.isEmpty else {
            throw SenderError(
                .unknownRecipient,
                "no APNs topic for \(card.userID): pass --topic BUNDLE_ID or use a card with \"push\".\"topic\""
            )
        }
        let key = device.currentKey
        let message = InnerMessage(
            messageID: messageID,
            sentAtMs: sentAtMs ?? self.nowMs(),
            senderUserID: self.identity.userID,
            senderSigningKeyID: self.identity.signingKey.publicKey.keyID,
            content: content
        )
        let sealed: SealedPush
        do {
            sealed = try PushPayload.seal(message, to: key.publicKey, signingKey: self.identity.signingKey)
        } catch {
            if error.code == .tooLarge { throw Self.tooLarge(message) }
            throw SenderError(error, context: "cannot seal the \(content.kind) for \(card.userID)")
        }
        let request = APNsRequest(
            deviceToken: validToken,
            headers: Self.uniformHeaders(topic: topic),
            body: sealed.bodyString
        )
        return BuiltPush(request: request, messageID: messageID, kind: content.kind, bucket: sealed.bucket)
    }
}

extension PushBuilder {
    /// The largest signed inner message (signed part + signature) a push can carry: one byte less than the largest
    /// padding bucket (docs/PROTOCOL.md §6).
    static var largestInnerMessage: Int { WireProtocol.paddingBuckets.last! - 1 }

    /// Says what is too large for this kind of message and what to do, with the numbers for this sender (the
    /// limit depends on the sender's user id, which every message carries).
    static func tooLarge(_ message: InnerMessage) -> SenderError {
        let size = (try? message.encodedLength()) ?? 0
        let limit = Self.largestInnerMessage
        let measured = "the \(message.kind) is \(size) bytes once signed and the most a push carries is \(limit)"
        switch message.content {
        case .text:
            return SenderError(.tooLarge, "\(measured): shorten the text (title, body and thread id count)")
        case .receipt(let receipt):
            // Each id is 16 bytes: find how many fit for this sender.
            let perID = 16
            let fitting = receipt.messageIDs.count - (size - limit + perID - 1) / perID
            return SenderError(
                .tooLarge,
                "\(measured): a receipt from \(message.senderUserID) holds at most \(max(fitting, 0)) message ids, "
                    + "this one has \(receipt.messageIDs.count); split it into several receipts"
            )
        case .callInvite(let invite):
            return SenderError(
                .tooLarge,
                "\(measured): the invite has \(invite.groupParticipants.count) participants and "
                    + "\(invite.customHeaders.count) custom headers; send fewer participants or shorter header values"
            )
        default:
            return SenderError(.tooLarge, "\(measured)")
        }
    }
}
