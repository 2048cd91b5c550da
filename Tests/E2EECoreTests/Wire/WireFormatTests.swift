import E2EETestVectors
import Foundation
import PushTransport
import Testing

@testable @_spi(Vectors) import E2EECore

@Suite("Wire format")
struct WireFormatTests {
    let keys = ProjectVectors.keys()

    func open(_ body: [UInt8], nowMs: UInt64 = ProjectVectors.baseTimeMs) throws(E2EEError) -> OpenedPush {
        try PushPayload.open(
            body: body,
            deviceKey: { self.keys.recipient.deviceKey(for: $0, nowMs: nowMs) },
            signingKey: { self.keys.contacts.signingKey(userID: $0, keyID: $1) }
        )
    }

    func message(_ content: MessageContent) -> InnerMessage {
        InnerMessage(
            messageID: .random(),
            sentAtMs: 1_800_000_000_123,
            senderUserID: "alice",
            senderSigningKeyID: self.keys.sender.signingKey.publicKey.keyID,
            content: content
        )
    }

    @Test("round trip of every kind with random ephemeral keys", arguments: 0..<4)
    func roundTrip(kindIndex: Int) throws {
        let contents: [MessageContent] = [
            .callInvite(
                CallInvite(
                    callID: UUID(),
                    callerHandle: "alice",
                    displayName: "Ålice 👋",
                    hasVideo: false,
                    ringTimeoutSeconds: 60,
                    groupParticipants: ["x"],
                    customHeaders: ["b": "2", "a": "1"]
                )
            ),
            .callCancel(CallCancel(callID: UUID(), reason: .declinedElsewhere)),
            .text(TextMessage(threadID: "t", title: "", body: "héllo")),
            .receipt(Receipt(messageIDs: (0..<64).map { _ in MessageID.random() })),
        ]
        let message = self.message(contents[kindIndex])
        let sealed = try PushPayload.seal(
            message,
            to: keys.recipient.currentDeviceKey.privateKey.publicKey,
            signingKey: keys.sender.signingKey
        )
        #expect(sealed.apnsBody.count == 2233)
        let opened = try self.open(sealed.apnsBody)
        #expect(opened.message == message)
        #expect(opened.recipientKeyID == keys.recipient.currentDeviceKey.keyID)
    }

    @Test("two seals of the same message differ (fresh ephemeral key) but have the same length")
    func freshEphemeral() throws {
        let message = self.message(.text(TextMessage(threadID: "t", title: "a", body: "b")))
        let pk = keys.recipient.currentDeviceKey.privateKey.publicKey
        let a = try PushPayload.seal(message, to: pk, signingKey: keys.sender.signingKey)
        let b = try PushPayload.seal(message, to: pk, signingKey: keys.sender.signingKey)
        #expect(a.apnsBody != b.apnsBody)
        #expect(a.apnsBody.count == b.apnsBody.count)
    }

    @Test("the body is exactly the placeholder alert plus one key")
    func bodyShape() throws {
        let sealed = try PushPayload.seal(
            self.message(.callCancel(CallCancel(callID: UUID(), reason: .remoteEnded))),
            to: keys.recipient.currentDeviceKey.privateKey.publicKey,
            signingKey: keys.sender.signingKey
        )
        let json = try #require(try JSONSerialization.jsonObject(with: Data(sealed.apnsBody)) as? [String: Any])
        #expect(Set(json.keys) == ["aps", "e2ee"])
        let aps = try #require(json["aps"] as? [String: Any])
        #expect(aps["mutable-content"] as? Int == 1)
        let alert = try #require(aps["alert"] as? [String: String])
        #expect(alert == ["title": "New message", "body": "Open the app to view it."])
    }

    @Test("text size boundaries: the small bucket, the large bucket, then a clear too-large error")
    func textBuckets() throws {
        let pk = keys.recipient.currentDeviceKey.privateKey.publicKey
        func bodyLength(_ n: Int) throws(E2EEError) -> Int {
            try PushPayload.seal(
                self.message(
                    .text(TextMessage(threadID: "thread", title: "title", body: String(repeating: "a", count: n)))
                ),
                to: pk,
                signingKey: keys.sender.signingKey
            ).apnsBody.count
        }
        // signed part overhead for this text: 1+16+8+6+8+2 + (1+6)+(1+5)+2 = 56, signature 64 → 120 + body
        #expect(try bodyLength(1024) == 2233)
        #expect(try bodyLength(1535 - 120) == 2233)
        #expect(try bodyLength(1536 - 120) == 4093)
        #expect(try bodyLength(2931 - 120) == 4093)
        #expect(throws: E2EEError(.tooLarge, "")) { try bodyLength(2932 - 120) }
    }

    @Test("an older device key opens until its expires_at_ms and not from then on")
    func rotationGrace() throws {
        let old = keys.recipient.deviceKeys[0]
        let retired = try #require(old.retiredAtMs)
        #expect(old.expiresAtMs == retired + Identity.defaultGracePeriodMs)
        let sealed = try PushPayload.seal(
            self.message(.text(TextMessage(threadID: "t", title: "x", body: "y"))),
            to: old.privateKey.publicKey,
            signingKey: keys.sender.signingKey
        )
        let expires = retired + Identity.defaultGracePeriodMs
        #expect(try self.open(sealed.apnsBody, nowMs: expires - 1).recipientKeyID == old.keyID)
        #expect(throws: E2EEError(.unknownRecipientKey, "")) { try self.open(sealed.apnsBody, nowMs: expires) }
    }

    @Test("a signature binds the recipient key id and enc: re-encrypting a signed message to another key fails")
    func signatureBindsEnvelope() throws {
        // Bob receives a message from Alice and re-seals the same signed plaintext to Carol (mallory here).
        let pk = keys.recipient.currentDeviceKey.privateKey.publicKey
        let message = self.message(.text(TextMessage(threadID: "t", title: "x", body: "y")))
        let sealed = try PushPayload.seal(message, to: pk, signingKey: keys.sender.signingKey)
        var context = try HPKE.RecipientContext(
            encapsulatedKey: sealed.envelope.encapsulatedKey,
            recipient: try X25519PrivateKey(secret: keys.recipient.currentDeviceKey.privateKey.secret),
            info: Array("e2ee-push/v1".utf8) + [0, 1, 0, 1] + sealed.envelope.recipientKeyID.bytes
        )
        let padded = try context.open(
            sealed.envelope.ciphertext,
            authenticating: Array(sealed.envelope.serialized.prefix(43))
        )
        let plaintext = padded.withUnsafeBytes { Array($0) }
        // Re-seal the same padded plaintext (signature included) to the stranger.
        let stranger = keys.stranger.currentDeviceKey.privateKey
        var sender = try HPKE.SenderContext(
            recipient: X25519PublicKey(rawRepresentation: stranger.publicKey.rawRepresentation),
            info: Array("e2ee-push/v1".utf8) + [0, 1, 0, 1] + stranger.publicKey.keyID.bytes
        )
        let header = [UInt8(1), 0, 1] + stranger.publicKey.keyID.bytes + sender.encapsulatedKey
        let ct = try sender.seal(plaintext, authenticating: header)
        let body = Array(("{\"aps\":{},\"e2ee\":\"" + Data(header + ct).base64EncodedString() + "\"}").utf8)
        #expect(throws: E2EEError(.badSignature, "")) {
            try PushPayload.open(
                body: body,
                deviceKey: { $0 == stranger.publicKey.keyID ? stranger : nil },
                signingKey: { self.keys.contacts.signingKey(userID: $0, keyID: $1) }
            )
        }
    }

    @Test("unknown kinds still verify and decode opaquely")
    func unknownKind() throws {
        let message = self.message(.unknown(kind: MessageKind(rawValue: 0x81), fields: [1, 2, 3]))
        let sealed = try PushPayload.seal(
            message,
            to: keys.recipient.currentDeviceKey.privateKey.publicKey,
            signingKey: keys.sender.signingKey
        )
        let opened = try self.open(sealed.apnsBody)
        #expect(opened.message.kind.rawValue == 0x81)
        #expect(opened.message.content == .unknown(kind: MessageKind(rawValue: 0x81), fields: [1, 2, 3]))
    }

    @Test("invalid fields are refused before sealing")
    func invalidFields() throws {
        let pk = keys.recipient.currentDeviceKey.privateKey.publicKey
        let bad: [MessageContent] = [
            .callInvite(
                CallInvite(callID: UUID(), callerHandle: "", displayName: "x", hasVideo: false, ringTimeoutSeconds: 30)
            ),
            .callInvite(
                CallInvite(callID: UUID(), callerHandle: "a", displayName: "x", hasVideo: false, ringTimeoutSeconds: 0)
            ),
            .receipt(Receipt(messageIDs: [])),
            .text(TextMessage(threadID: String(repeating: "t", count: 256), title: "", body: "")),
        ]
        for content in bad {
            #expect(throws: E2EEError(.invalidArgument, "")) {
                try PushPayload.seal(self.message(content), to: pk, signingKey: self.keys.sender.signingKey)
            }
        }
    }
}
