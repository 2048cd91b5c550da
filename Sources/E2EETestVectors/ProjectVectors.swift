@_spi(Vectors) public import E2EECore
import Foundation
import PushTransport

/// The project's own wire-format vectors (Fixtures/e2ee-vectors.json): fixed keys, ephemeral keys, message ids,
/// times and padding give exact APNs body bytes; negative vectors give expected error codes.
///
/// Everything is derived deterministically: each secret is the seed rule of docs/PROTOCOL.md §13 applied to a fixed
/// label (see ``seed(_:)``), so the file is reproducible by `swift run e2ee-vectors > Fixtures/e2ee-vectors.json`
/// and a test fails if code and fixture disagree. The contacts of the envelope vectors come from the senders'
/// signed device lists (``deviceList(of:)``); the device-list vectors are in `ProjectVectors+DeviceLists.swift`.
public enum ProjectVectors: Sendable {
    /// 32 deterministic bytes for a label: the label's UTF-8 repeated/truncated, XOR-mixed with its index.
    /// (Deliberately simple: anyone can recompute it from PROTOCOL.md's description.)
    public static func seed(_ label: String) -> [UInt8] {
        let utf8 = Array("e2ee-vectors/\(label)".utf8)
        return (0..<32).map { i in utf8[i % utf8.count] ^ UInt8(i) }
    }

    public static let baseTimeMs: UInt64 = 1_790_000_000_000
    public static let ringTimeout: UInt16 = 30

    public struct Keys: Sendable {
        public let recipient: Identity
        public let sender: Identity
        public let stranger: Identity
        public var contacts: ContactBook { ContactBook([ProjectVectors.deviceList(of: self.sender)]) }
    }

    public static func keys() -> Keys {
        func identity(_ name: String, display: String, rotated: Bool) -> Identity {
            var keys: [(key: DevicePrivateKey, createdAtMs: UInt64, retiredAtMs: UInt64?, expiresAtMs: UInt64?)] = []
            if rotated {
                keys.append(
                    (
                        deviceKey("\(name)/device-key-old"),
                        baseTimeMs - 86_400_000, baseTimeMs - 3_600_000,
                        baseTimeMs - 3_600_000 + Identity.defaultGracePeriodMs
                    )
                )
            }
            keys.append(
                (
                    deviceKey("\(name)/device-key"),
                    baseTimeMs - 3_600_000, nil, nil
                )
            )
            return try! Identity(
                userID: name,
                displayName: display,
                deviceID: "phone",
                signingKey: SigningPrivateKey(seed: SecureBytes(copying: seed("\(name)/signing-key"))),
                userSigningKey: SigningPrivateKey(seed: SecureBytes(copying: seed("\(name)/user-key"))),
                deviceKeys: keys
            )
        }
        return Keys(
            recipient: identity("bob", display: "Bob", rotated: true),
            sender: identity("alice", display: "Alice Example", rotated: false),
            stranger: identity("mallory", display: "Mallory", rotated: false)
        )
    }

    /// The one-device list of a vector identity (version 1, signed in and issued at ``baseTimeMs`` - 1 h).
    public static func deviceList(of identity: Identity) -> DeviceList {
        try! DeviceList.signedForVectors(
            userID: identity.userID,
            displayName: identity.displayName,
            userKey: identity.userSigningKey!,
            listVersion: 1,
            issuedAtMs: baseTimeMs - 3_600_000,
            devices: [(identity, baseTimeMs - 3_600_000, nil)]
        )
    }

    /// The messages of the positive vectors, by name.
    public static func messages(sender: Identity) -> [(name: String, message: InnerMessage)] {
        let callID = UUID(uuidString: "6F1C8A52-3B1E-4C7A-9D2E-5A4B3C2D1E0F")!
        func message(_ n: UInt8, _ content: MessageContent) -> InnerMessage {
            InnerMessage(
                messageID: try! MessageID(bytes: (0..<16).map { UInt8($0) &+ n &* 16 }),
                sentAtMs: baseTimeMs + UInt64(n) * 1000,
                senderUserID: sender.userID,
                senderSigningKeyID: sender.signingKey.publicKey.keyID,
                content: content
            )
        }
        let body1k = String(repeating: "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", count: 18)
        return [
            (
                "call-invite",
                message(
                    1,
                    .callInvite(
                        CallInvite(
                            callID: callID,
                            callerHandle: "alice",
                            displayName: "Alice Example",
                            hasVideo: true,
                            ringTimeoutSeconds: ringTimeout
                        )
                    )
                )
            ),
            (
                "call-invite-group",
                message(
                    2,
                    .callInvite(
                        CallInvite(
                            callID: callID,
                            callerHandle: "alice",
                            displayName: "Alice Example",
                            hasVideo: false,
                            ringTimeoutSeconds: 45,
                            groupParticipants: ["carol", "dave"],
                            customHeaders: ["x-room": "standup", "x-conf": "7"]
                        )
                    )
                )
            ),
            ("call-cancel", message(3, .callCancel(CallCancel(callID: callID, reason: .answeredElsewhere)))),
            (
                "text",
                message(
                    4,
                    .text(TextMessage(threadID: "thread-42", title: "Lunch?", body: "Are we still on for 12:30?"))
                )
            ),
            (
                "text-1k",
                message(
                    5,
                    .text(TextMessage(threadID: "thread-42", title: "Long read", body: String(body1k.prefix(1024))))
                )
            ),
            (
                "text-large-bucket",
                message(
                    6,
                    .text(
                        TextMessage(
                            threadID: "thread-42",
                            title: "Longer read",
                            body: String(repeating: "x", count: 2000)
                        )
                    )
                )
            ),
            (
                "receipt",
                message(
                    7,
                    .receipt(
                        Receipt(messageIDs: [
                            try! MessageID(bytes: [UInt8](repeating: 0xAB, count: 16)),
                            try! MessageID(bytes: [UInt8](repeating: 0xCD, count: 16)),
                        ])
                    )
                )
            ),
        ]
    }

    /// The message's clear fields, so an implementation can check its decoder field by field (PROTOCOL.md §13).
    static func describe(_ m: InnerMessage) -> [String: Any] {
        var d: [String: Any] = [
            "kind": m.kind.description, "message_id": m.messageID.hex, "sent_at_ms": m.sentAtMs,
            "sender_user_id": m.senderUserID, "sender_signing_key_id": m.senderSigningKeyID.hex,
        ]
        func uuidHex(_ u: UUID) -> String { withUnsafeBytes(of: u.uuid) { Hex.encode($0) } }
        switch m.content {
        case .callInvite(let c):
            d["call_id"] = uuidHex(c.callID)
            d["caller_handle"] = c.callerHandle
            d["display_name"] = c.displayName
            d["has_video"] = c.hasVideo
            d["ring_timeout_s"] = Int(c.ringTimeoutSeconds)
            d["participants"] = c.groupParticipants
            d["headers"] = c.customHeaders
        case .callCancel(let c):
            d["call_id"] = uuidHex(c.callID)
            d["reason"] = c.reason.description
        case .text(let t):
            d["thread_id"] = t.threadID
            d["title"] = t.title
            d["body"] = t.body
        case .receipt(let r):
            d["message_ids"] = r.messageIDs.map(\.hex)
        case .unknown(_, let fields):
            d["raw"] = Hex.encode(fields)
        }
        return d
    }

    /// The message of the key-lifecycle vectors: a text from alice, sealed to bob's older device key.
    public static func oldKeyMessage(sender: Identity) -> InnerMessage {
        InnerMessage(
            messageID: try! MessageID(bytes: (0..<16).map { UInt8($0) &+ 0x80 }),
            sentAtMs: baseTimeMs + 8000,
            senderUserID: sender.userID,
            senderSigningKeyID: sender.signingKey.publicKey.keyID,
            content: .text(TextMessage(threadID: "thread-42", title: "Old key", body: "Sealed to a retired key."))
        )
    }

    /// When bob's older device key stops opening (§11.1 `expires_at_ms`, as in bob's lists).
    public static var oldKeyExpiresAtMs: UInt64 { keys().recipient.deviceKeys[0].expiresAtMs! }

    /// Key lifecycle (§5 step 6, §11.1): one body sealed to bob's older key, opened at three times.
    static func keyLifecycleSection() -> [String: Any] {
        let keys = keys()
        let oldKey = keys.recipient.deviceKeys[0]
        let message = oldKeyMessage(sender: keys.sender)
        let sealed = try! PushPayload.seal(
            message,
            to: oldKey.privateKey.publicKey,
            signingKey: keys.sender.signingKey,
            padding: APNsAlertTransport.padding,
            ephemeral: SecureBytes(copying: seed("ephemeral/old-key"))
        )
        let expires = oldKeyExpiresAtMs
        func vector(_ name: String, _ nowMs: UInt64, _ error: E2EEError.Code?) -> [String: Any] {
            [
                "name": name, "now_ms": nowMs, "expected_error": error.map { $0.rawValue as Any } ?? NSNull(),
                "message": error == nil ? describe(message) as Any : NSNull(),
            ]
        }
        return [
            "recipient_key_id": oldKey.keyID.hex,
            "recipient_key_seed_label": "bob/device-key-old",
            "ephemeral_secret_seed_label": "ephemeral/old-key",
            "expires_at_ms": expires,
            "envelope": Hex.encode(sealed.envelope.serialized),
            "body": sealed.apnsBodyString,
            "checks": [
                vector("old-key-before-expiry", expires - 1, nil),
                vector("old-key-at-expiry", expires, .unknownRecipientKey),
                vector("old-key-after-expiry", expires + 1, .unknownRecipientKey),
            ],
        ]
    }

    /// Builds the whole vector file (JSON, sorted keys, one trailing newline).
    public static func generate() -> [UInt8] {
        let keys = keys()
        var positives: [[String: Any]] = []
        var bodies: [String: [UInt8]] = [:]
        for (index, (name, message)) in messages(sender: keys.sender).enumerated() {
            let ephemeral = SecureBytes(copying: seed("ephemeral/\(index)"))
            let sealed = try! PushPayload.seal(
                message,
                to: keys.recipient.currentDeviceKey.privateKey.publicKey,
                signingKey: keys.sender.signingKey,
                padding: APNsAlertTransport.padding,
                ephemeral: ephemeral
            )
            bodies[name] = sealed.apnsBody
            positives.append([
                "name": name,
                "kind": message.kind.description,
                "ephemeral_secret_seed_label": "ephemeral/\(index)",
                "enc": Hex.encode(sealed.envelope.encapsulatedKey),
                "message_id": message.messageID.hex,
                "sent_at_ms": message.sentAtMs,
                "recipient_key_id": sealed.envelope.recipientKeyID.hex,
                "bucket": sealed.bucket,
                "envelope": Hex.encode(sealed.envelope.serialized),
                "body": sealed.apnsBodyString,
                "body_length": sealed.apnsBody.count,
                "message": describe(message),
            ])
        }

        // Negative vectors, derived from the call invite.
        let invite = messages(sender: keys.sender)[0].message
        let inviteBody = bodies["call-invite"]!
        let envelope = try! APNsAlertTransport.envelope(fromBody: inviteBody).serialized
        func bodyFor(_ envelopeBytes: [UInt8]) -> String {
            "{\"aps\":{\"alert\":{\"title\":\"\(APNsAlertTransport.placeholderTitle)\",\"body\":\"\(APNsAlertTransport.placeholderBody)\"},\"mutable-content\":1},\"e2ee\":\""
                + Data(envelopeBytes).base64EncodedString() + "\"}"
        }
        func flipped(_ offset: Int) -> [UInt8] {
            var e = envelope
            e[offset] ^= 0x01
            return e
        }
        let ephemeral = SecureBytes(copying: seed("ephemeral/negative"))
        let recipientKey = keys.recipient.currentDeviceKey.privateKey.publicKey
        let forged = try! PushPayload.sealUnchecked(
            invite,
            to: recipientKey,
            recipientKeyID: recipientKey.keyID,
            signingKey: keys.stranger.signingKey,
            padding: APNsAlertTransport.padding,
            ephemeral: ephemeral
        )
        let strangerMessage = InnerMessage(
            messageID: invite.messageID,
            sentAtMs: invite.sentAtMs,
            senderUserID: keys.stranger.userID,
            senderSigningKeyID: keys.stranger.signingKey.publicKey.keyID,
            content: invite.content
        )
        let unknownSender = try! PushPayload.seal(
            strangerMessage,
            to: recipientKey,
            signingKey: keys.stranger.signingKey,
            padding: APNsAlertTransport.padding,
            ephemeral: ephemeral
        )
        let otherRecipient = try! PushPayload.seal(
            invite,
            to: keys.stranger.currentDeviceKey.privateKey.publicKey,
            signingKey: keys.sender.signingKey,
            padding: APNsAlertTransport.padding,
            ephemeral: ephemeral
        )
        let mislabelled = try! PushPayload.sealUnchecked(
            invite,
            to: keys.stranger.currentDeviceKey.privateKey.publicKey,
            recipientKeyID: recipientKey.keyID,
            signingKey: keys.sender.signingKey,
            padding: APNsAlertTransport.padding,
            ephemeral: ephemeral
        )
        // A message from alice signed by a device of hers that her list does not hold (§9 step 4).
        let laptopKey = signingKey("alice/laptop/signing-key")
        let unlistedDevice = try! PushPayload.seal(
            InnerMessage(
                messageID: invite.messageID,
                sentAtMs: invite.sentAtMs,
                senderUserID: keys.sender.userID,
                senderSigningKeyID: laptopKey.publicKey.keyID,
                content: invite.content
            ),
            to: recipientKey,
            signingKey: laptopKey,
            padding: APNsAlertTransport.padding,
            ephemeral: ephemeral
        )
        var lowOrder = envelope
        for i in 11..<43 { lowOrder[i] = 0 }
        var version2 = envelope
        version2[0] = 0x02

        // Non-canonical base64: the last character before "=" carries 2 unused bits; set the lowest one.
        var nonCanonical = Array(bodyFor(envelope).utf8)
        let lastCharIndex = nonCanonical.count - 4  // ... X = " }
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let index = alphabet.firstIndex(of: nonCanonical[lastCharIndex])!
        nonCanonical[lastCharIndex] = alphabet[index | 1]

        let negatives: [(String, String, E2EEError.Code)] = [
            ("flip-version", bodyFor(flipped(0)), .unsupportedVersion),
            ("unknown-version-2", bodyFor(version2), .unsupportedVersion),
            ("flip-suite", bodyFor(flipped(2)), .unsupportedSuite),
            ("flip-key-id", bodyFor(flipped(3)), .unknownRecipientKey),
            ("flip-enc", bodyFor(flipped(11)), .openFailed),
            ("flip-ciphertext", bodyFor(flipped(43)), .openFailed),
            ("flip-tag", bodyFor(flipped(envelope.count - 1)), .openFailed),
            ("low-order-enc", bodyFor(lowOrder), .openFailed),
            ("truncated-header", bodyFor(Array(envelope.prefix(20))), .malformedEnvelope),
            ("truncated-ciphertext", bodyFor(Array(envelope.dropLast(1))), .malformedEnvelope),
            ("empty-envelope", bodyFor([]), .malformedEnvelope),
            ("wrong-recipient", otherRecipient.apnsBodyString, .unknownRecipientKey),
            ("wrong-recipient-key-id-relabelled", mislabelled.apnsBodyString, .openFailed),
            ("bad-signature", forged.apnsBodyString, .badSignature),
            ("unknown-sender", unknownSender.apnsBodyString, .unknownSender),
            ("unknown-sender-device", unlistedDevice.apnsBodyString, .unknownSender),
            (
                "bad-base64",
                bodyFor([]).replacingOccurrences(of: "\"e2ee\":\"\"", with: "\"e2ee\":\"!!not base64!!\""),
                .malformedEnvelope
            ),
            ("non-canonical-base64", String(decoding: nonCanonical, as: UTF8.self), .malformedEnvelope),
            ("not-json", "{\"aps\":", .malformedEnvelope),
            ("json-array", "[]", .malformedEnvelope),
            ("foreign-payload", "{\"aps\":{\"alert\":\"hi\"}}", .foreignPayload),
            (
                "too-large",
                String(decoding: inviteBody, as: UTF8.self).replacingOccurrences(
                    of: "\"mutable-content\":1",
                    with: "\"mutable-content\":1,\"pad\":\""
                        + String(repeating: "p", count: 4097 - inviteBody.count - 9) + "\""
                ), .tooLarge
            ),
        ]

        let keyInfo: [String: Any] = [
            "seed_rule": "seed(label) = [utf8(\"e2ee-vectors/\" + label)[i % n] XOR i for i in 0..<32]",
            "recipient_user_id": keys.recipient.userID,
            "recipient_device_key_seed_label": "bob/device-key",
            "recipient_device_public_key": Hex.encode(recipientKey.rawRepresentation),
            "recipient_device_key_id": recipientKey.keyID.hex,
            "recipient_old_device_key_seed_label": "bob/device-key-old",
            "recipient_old_device_key_id": keys.recipient.deviceKeys[0].keyID.hex,
            "sender_user_id": keys.sender.userID,
            "sender_signing_key_seed_label": "alice/signing-key",
            "sender_signing_public_key": Hex.encode(keys.sender.signingKey.publicKey.rawRepresentation),
            "sender_signing_key_id": keys.sender.signingKey.publicKey.keyID.hex,
            "stranger_signing_key_seed_label": "mallory/signing-key",
            "stranger_device_key_seed_label": "mallory/device-key",
            "sender_device_list": "alice-v1",
            "recipient_device_list": "bob-v1",
            "unlisted_sender_device_signing_key_seed_label": "alice/laptop/signing-key",
        ]
        let file: [String: Any] = [
            "description":
                "E2EE push wire format v1 vectors. Regenerate: swift run e2ee-vectors > Fixtures/e2ee-vectors.json. Spec: docs/PROTOCOL.md.",
            "protocol_version": Int(WireProtocol.version),
            "suite": Int(CryptoSuite.classical.id),
            "keys": keyInfo,
            "positive": positives,
            "negative": negatives.map { ["name": $0.0, "body": $0.1, "expected_error": $0.2.rawValue] },
            "key_lifecycle": keyLifecycleSection(),
            "device_lists": deviceListSection(),
        ]
        let data = try! JSONSerialization.data(
            withJSONObject: file,
            options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        )
        return Array(data) + [0x0A]
    }
}
