import Crypto
import E2EECore
import Foundation

/// The fixed inputs every workload shares: keys in all three libraries, one sealed envelope of the 1,536-byte
/// bucket, and the HPKE inputs (info and aad of the same sizes as the envelope's).
struct Scenario {
    // Recipient device key: the same scalar in E2EECore, swift-crypto and raw form.
    let recipientSecret: [UInt8]
    let recipientPublic: [UInt8]
    let recipient: X25519PrivateKey
    /// The same key as E2EECore's device key of the classical suite.
    let device: DevicePrivateKey
    let cryptoRecipient: Curve25519.KeyAgreement.PrivateKey

    // Sender signing key (E2EECore), with a raw libsodium and a swift-crypto key of their own for the sign lines.
    let signingKey: SigningPrivateKey
    let rawSigning: (publicKey: [UInt8], secretKey: [UInt8])
    let cryptoSigning: Curve25519.Signing.PrivateKey

    // The envelope.
    let message: InnerMessage
    let sealed: SealedPush
    let header: [UInt8]
    let info: [UInt8]
    /// signature context || header || signed part: the bytes the envelope signature covers.
    let signedMessage: [UInt8]
    let signature: [UInt8]
    let signedPartLength: Int

    static let signatureContext: [UInt8] = Array("e2ee-push/sig/v1".utf8) + [0x00]

    init() throws {
        var secret = [UInt8](repeating: 0, count: 32)
        RawPrimitives.random(&secret)
        self.recipientSecret = secret
        self.recipient = try X25519PrivateKey(secret: SecureBytes(copying: secret))
        self.recipientPublic = self.recipient.publicKey.rawRepresentation
        self.device = try DevicePrivateKey(suite: .classical, secret: SecureBytes(copying: secret))
        self.cryptoRecipient = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: secret)
        precondition(Array(self.cryptoRecipient.publicKey.rawRepresentation) == self.recipientPublic)

        self.signingKey = SigningPrivateKey.generate()
        self.rawSigning = RawPrimitives.ed25519KeyPair()
        self.cryptoSigning = Curve25519.Signing.PrivateKey()

        // A call invite of ordinary size: it lands in the 1,536-byte bucket like every call push.
        self.message = InnerMessage(
            messageID: .random(),
            sentAtMs: 1_790_000_000_000,
            senderUserID: "alice@example.org",
            senderSigningKeyID: self.signingKey.publicKey.keyID,
            content: .callInvite(
                CallInvite(
                    callID: UUID(),
                    callerHandle: "alice@example.org",
                    displayName: "Alice Example",
                    hasVideo: true,
                    ringTimeoutSeconds: 30,
                    groupParticipants: ["carol@example.org"],
                    customHeaders: ["x-room": "standup"]
                )
            )
        )
        self.sealed = try PushPayload.seal(self.message, to: self.device.publicKey, signingKey: self.signingKey)
        let envelope = self.sealed.envelope
        self.header = Array(envelope.serialized.prefix(envelope.headerLength))
        // docs/PROTOCOL.md: info = "e2ee-push/v1" || 0x00 || version || suite || recipient key id.
        self.info =
            Array("e2ee-push/v1".utf8) + [
                0x00, envelope.version, UInt8(envelope.suite.id >> 8), UInt8(envelope.suite.id & 0xff),
            ]
            + envelope.recipientKeyID.bytes

        // Open once with the raw floor to get the signed part; this also proves the floor does the real work.
        let raw = RawHPKE()
        var padded = [UInt8](repeating: 0, count: envelope.ciphertext.count - 16)
        guard
            raw.open(
                ciphertext: envelope.ciphertext,
                enc: envelope.encapsulatedKey,
                recipientSecret: secret,
                recipientPublic: self.recipientPublic,
                info: self.info,
                aad: self.header,
                plaintext: &padded
            )
        else {
            fatalError("the raw floor cannot open E2EECore's envelope: the wire format changed; update Scenario.swift")
        }
        let length = RawPrimitives.unpad(padded, blockSize: padded.count)
        precondition(length > 64, "bad padding in the floor's plaintext")
        self.signedPartLength = length - 64
        self.signature = Array(padded[self.signedPartLength..<length])
        self.signedMessage = Self.signatureContext + self.header + padded[0..<self.signedPartLength]
        guard
            RawPrimitives.ed25519Verify(
                signature: self.signature,
                message: self.signedMessage,
                publicKey: self.signingKey.publicKey.rawRepresentation
            ) == 0
        else {
            fatalError("the floor's signature check fails: the signed bytes changed; update Scenario.swift")
        }
    }

    var bucket: Int { self.sealed.bucket }
}
