/// A sealed push: the envelope and what went into it.
///
/// The core knows envelopes and padding buckets only. The body a push service carries (the APNs JSON body of
/// docs/PROTOCOL.md §4 and its 4,096-byte limit) is framed by a transport of the PushTransport library
/// (`APNsAlertTransport`), which gives `SealedPush.apnsBody`.
public struct SealedPush: Sendable, Hashable {
    public let envelope: Envelope
    /// The padding bucket the inner message was padded to.
    public let bucket: Int
    public let message: InnerMessage
}

/// An opened, verified push.
public struct OpenedPush: Sendable, Hashable {
    public let message: InnerMessage
    /// The device key the envelope was sealed for.
    public let recipientKeyID: KeyID
    /// The padding bucket of the envelope.
    public let bucket: Int
}

/// Seals inner messages into envelopes and opens them again (docs/PROTOCOL.md, "Sealing" and "Opening"). How an
/// envelope travels (the APNs body) is a push transport's business (the PushTransport library).
public enum PushPayload: Sendable {
    /// Seals `message` for one recipient device key, signed by `signingKey`.
    ///
    /// - Parameters:
    ///   - message: the inner message; its `senderSigningKeyID` must be `signingKey`'s key id.
    ///   - recipient: the recipient's device key (a card's newest key).
    ///   - signingKey: the sender's Ed25519 key.
    /// - Returns: the sealed push, whose envelope is padded to one of ``WireProtocol/paddingBuckets``.
    /// - Throws: `.tooLarge` when the message does not fit the largest bucket; `.invalidArgument` for a field
    ///   out of range; `.invalidKey` for a low-order recipient key.
    public static func seal(
        _ message: InnerMessage,
        to recipient: X25519PublicKey,
        signingKey: SigningPrivateKey
    ) throws(E2EEError) -> SealedPush {
        try self.seal(message, to: recipient, signingKey: signingKey, ephemeral: .generate())
    }

    /// Deterministic sealing with a given ephemeral key, for test vectors only.
    @_spi(Vectors)
    public static func seal(
        _ message: InnerMessage,
        to recipient: X25519PublicKey,
        signingKey: SigningPrivateKey,
        ephemeral: X25519PrivateKey
    ) throws(E2EEError) -> SealedPush {
        guard message.senderSigningKeyID == signingKey.publicKey.keyID else {
            throw E2EEError.invalidArgument(
                "the message names signing key \(message.senderSigningKeyID), not the given key"
            )
        }
        return try self.sealUnchecked(
            message,
            to: recipient,
            recipientKeyID: recipient.keyID,
            signingKey: signingKey,
            ephemeral: ephemeral
        )
    }

    /// Seals without checking that the message names the signing key, and with a given recipient key id in the
    /// clear header: only for building negative test vectors (forged signatures, mislabelled envelopes).
    @_spi(Vectors)
    public static func sealUnchecked(
        _ message: InnerMessage,
        to recipient: X25519PublicKey,
        recipientKeyID: KeyID,
        signingKey: SigningPrivateKey,
        ephemeral: X25519PrivateKey
    ) throws(E2EEError) -> SealedPush {
        var context = try HPKE.SenderContext(
            recipient: recipient,
            info: WireProtocol.hpkeInfo(recipientKeyID: recipientKeyID),
            ephemeral: ephemeral
        )
        let enc = context.encapsulatedKey

        var plaintext = try message.encodeSignedPart()
        defer { secureWipe(&plaintext) }
        let header = [WireProtocol.version] + HPKE.i2osp(WireProtocol.suite) + recipientKeyID.bytes + enc
        plaintext += try signingKey.signature(for: WireProtocol.signatureContext + header + plaintext)

        guard let bucket = WireProtocol.paddingBuckets.first(where: { plaintext.count < $0 }) else {
            throw E2EEError(
                .tooLarge,
                "the message is \(plaintext.count) bytes once signed; the largest that fits the largest padding bucket is \(WireProtocol.paddingBuckets.last! - 1) bytes"
            )
        }
        var padded = try Primitives.pad(plaintext, blockSize: bucket)
        defer { secureWipe(&padded) }
        precondition(padded.count == bucket)
        let ciphertext = try context.seal(padded, authenticating: header)
        let envelope = Envelope(recipientKeyID: recipientKeyID, encapsulatedKey: enc, ciphertext: ciphertext)
        return SealedPush(envelope: envelope, bucket: bucket, message: message)
    }

    /// Opens a parsed envelope: decrypts, unpads, decodes and verifies. (A push body is unframed into an envelope
    /// by its transport first; the PushTransport library's `PushPayload.open(body:transport:deviceKey:signingKey:)`
    /// does both.)
    ///
    /// - Parameters:
    ///   - envelope: the parsed envelope.
    ///   - deviceKey: returns the device's private key for a key id, or nil if none (or past its grace period).
    ///   - signingKey: returns the sender's Ed25519 public key for (user id, signing key id), or nil if unknown.
    /// - Throws: see docs/PROTOCOL.md "Error codes": `.unknownRecipientKey`, `.openFailed` (every decryption
    ///   failure), `.malformedMessage`, `.unknownSender`, `.badSignature`.
    public static func open(
        _ envelope: Envelope,
        deviceKey: (KeyID) -> X25519PrivateKey?,
        signingKey: (_ userID: String, _ keyID: KeyID) -> SigningPublicKey?
    ) throws(E2EEError) -> OpenedPush {
        guard let key = deviceKey(envelope.recipientKeyID) else {
            throw E2EEError(
                .unknownRecipientKey,
                "no device key \(envelope.recipientKeyID) here (reinstalled or rotated?): the sender must fetch this device's current card"
            )
        }
        var context = try HPKE.RecipientContext(
            encapsulatedKey: envelope.encapsulatedKey,
            recipient: key,
            info: WireProtocol.hpkeInfo(recipientKeyID: envelope.recipientKeyID)
        )
        let header = envelope.header  // built once: the AEAD's aad and part of the signed bytes
        let padded = try context.open(envelope.ciphertext, authenticating: header)
        var plaintext: [UInt8] = try padded.withUnsafeBytes { (p: UnsafeRawBufferPointer) throws(E2EEError) in
            guard let length = Primitives.unpaddedLength(p, blockSize: p.count) else { throw E2EEError.openFailed() }
            return Array(p[0..<length])
        }
        defer { secureWipe(&plaintext) }
        let (message, signedPart, signature) = try InnerMessage.decode(plaintext)
        guard let publicKey = signingKey(message.senderUserID, message.senderSigningKeyID) else {
            throw E2EEError(
                .unknownSender,
                "the sender \"\(message.senderUserID)\" with signing key \(message.senderSigningKeyID) is not in the contacts"
            )
        }
        guard publicKey.isValidSignature(signature, for: WireProtocol.signatureContext + header + signedPart)
        else {
            throw E2EEError(.badSignature, "the sender's signature does not verify: the message was forged or altered")
        }
        return OpenedPush(
            message: message,
            recipientKeyID: envelope.recipientKeyID,
            bucket: envelope.ciphertext.count - 16
        )
    }
}
