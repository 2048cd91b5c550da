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
    /// The app's bundle id (`apns-topic`).
    public let topic: String
    /// The wall clock, in milliseconds since the epoch, for the signed send time.
    public let nowMs: @Sendable () -> UInt64

    public init(identity: Identity, topic: String, nowMs: @escaping @Sendable () -> UInt64 = PushBuilder.systemNowMs) {
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
    /// assume a length).
    public static func validateDeviceToken(_ token: String) throws(SenderError) -> String {
        let lower = token.lowercased()
        guard (16...200).contains(lower.utf8.count), lower.utf8.count % 2 == 0, Hex.decode(lower) != nil else {
            throw SenderError(
                .badDeviceToken,
                "the device token must be an even number of hex digits (64 for a 32-byte APNs token), got \(token.utf8.count) characters"
            )
        }
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
    /// - Throws: `SenderError` with `.unknownRecipient` (no current key or no token), `.badDeviceToken`,
    ///   `.tooLarge` or `.usage` (a field out of range).
    public func build(
        _ content: MessageContent,
        to card: ContactCard,
        deviceToken: String? = nil,
        messageID: MessageID = .random(),
        sentAtMs: UInt64? = nil
    ) throws(SenderError) -> BuiltPush {
        guard let token = deviceToken ?? card.push?.deviceToken else {
            throw SenderError(
                .unknownRecipient,
                "no device token for \(card.userID): pass --device-token or use a card with \"push\".\"device_token\""
            )
        }
        let validToken = try Self.validateDeviceToken(token)
        guard let key = card.currentDeviceKey else {
            throw SenderError(.unknownRecipient, "the card of \(card.userID) has no current device key")
        }
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
            throw SenderError(error, context: "cannot seal the \(content.kind) for \(card.userID)")
        }
        let request = APNsRequest(
            deviceToken: validToken,
            headers: Self.uniformHeaders(topic: self.topic),
            body: sealed.bodyString
        )
        return BuiltPush(request: request, messageID: messageID, kind: content.kind, bucket: sealed.bucket)
    }
}
