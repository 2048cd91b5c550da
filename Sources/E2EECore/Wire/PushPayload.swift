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
/// envelope travels (the APNs body) is a push transport's business (the PushTransport library): it gives the padding
/// buckets (``PaddingTable``) each suite may use.
public enum PushPayload: Sendable {
    /// Seals `message` for one recipient device key, signed by `signingKey`, in the suite of the key.
    ///
    /// - Parameters:
    ///   - message: the inner message; its `senderSigningKeyID` must be `signingKey`'s key id.
    ///   - recipient: the recipient's device key (a device's current key in its list); its suite is the envelope's.
    ///   - signingKey: the sender's Ed25519 key.
    ///   - padding: the buckets of the transport that will carry the envelope.
    /// - Returns: the sealed push, whose envelope is padded to one of the suite's buckets in `padding`.
    /// - Throws: `.tooLarge` when the message does not fit the suite's largest bucket; `.invalidArgument` for a field
    ///   out of range; `.invalidKey` for a recipient key the suite's KEM refuses (a low-order X25519 key).
    public static func seal(
        _ message: InnerMessage,
        to recipient: DevicePublicKey,
        signingKey: SigningPrivateKey,
        padding: PaddingTable
    ) throws(E2EEError) -> SealedPush {
        try self.checkSigner(message, signingKey)
        return try self.sealUnchecked(
            message,
            to: recipient,
            recipientKeyID: recipient.keyID,
            signingKey: signingKey,
            padding: padding,
            ephemeral: nil
        )
    }

    /// Deterministic sealing with given encapsulation randomness (an X25519 ephemeral secret), for test vectors
    /// only.
    @_spi(Vectors)
    public static func seal(
        _ message: InnerMessage,
        to recipient: DevicePublicKey,
        signingKey: SigningPrivateKey,
        padding: PaddingTable,
        ephemeral: SecureBytes
    ) throws(E2EEError) -> SealedPush {
        try self.checkSigner(message, signingKey)
        return try self.sealUnchecked(
            message,
            to: recipient,
            recipientKeyID: recipient.keyID,
            signingKey: signingKey,
            padding: padding,
            ephemeral: ephemeral
        )
    }

    private static func checkSigner(_ message: InnerMessage, _ signingKey: SigningPrivateKey) throws(E2EEError) {
        guard message.senderSigningKeyID == signingKey.publicKey.keyID else {
            throw E2EEError.invalidArgument(
                "the message names signing key \(message.senderSigningKeyID), not the given key"
            )
        }
    }

    /// Seals without checking that the message names the signing key, and with a given recipient key id in the
    /// clear header: only for building negative test vectors (forged signatures, mislabelled envelopes).
    ///
    /// - Parameter ephemeral: the encapsulation randomness, or nil for fresh.
    @_spi(Vectors)
    public static func sealUnchecked(
        _ message: InnerMessage,
        to recipient: DevicePublicKey,
        recipientKeyID: KeyID,
        signingKey: SigningPrivateKey,
        padding: PaddingTable,
        ephemeral: SecureBytes? = nil
    ) throws(E2EEError) -> SealedPush {
        let suite = recipient.suite
        var plaintext = try message.encodeSignedPart()
        defer { secureWipe(&plaintext) }
        let buckets = padding.buckets(for: suite)
        guard let largest = buckets.last else {
            throw E2EEError.invalidArgument("the transport carries no envelope of suite \(suite.name)")
        }
        let signedLength = plaintext.count + Primitives.ed25519SignatureLength
        guard let bucket = buckets.first(where: { signedLength < $0 }) else {
            throw E2EEError(
                .tooLarge,
                "the message is \(signedLength) bytes once signed; the largest that fits the largest padding bucket of suite \(suite.name) is \(largest - 1) bytes"
            )
        }
        // `enc` comes first: the signature covers the header, which holds it (§8).
        let (enc, ciphertext) = try suite.primitive.seal(
            to: recipient.rawRepresentation,
            info: WireProtocol.hpkeInfo(suite: suite, recipientKeyID: recipientKeyID),
            ephemeral: ephemeral
        ) { (enc) throws(E2EEError) -> (aad: [UInt8], plaintext: [UInt8]) in
            let header = Envelope.header(suite: suite, recipientKeyID: recipientKeyID, encapsulatedKey: enc)
            plaintext += try signingKey.signature(for: WireProtocol.signatureContext + header + plaintext)
            return (header, try Primitives.pad(plaintext, blockSize: bucket))
        }
        let envelope = Envelope(
            suite: suite,
            recipientKeyID: recipientKeyID,
            encapsulatedKey: enc,
            ciphertext: ciphertext
        )
        return SealedPush(envelope: envelope, bucket: bucket, message: message)
    }

    /// Opens a parsed envelope: decrypts, unpads, decodes and verifies. (A push body is unframed into an envelope
    /// by its transport first; the PushTransport library's `PushPayload.open(body:transport:deviceKey:signingKey:)`
    /// does both.)
    ///
    /// - Parameters:
    ///   - envelope: the parsed envelope.
    ///   - deviceKey: returns the device's private key for a key id, or nil if none (or past its grace period). A
    ///     key of another suite than the envelope's is no key for it.
    ///   - signingKey: returns the sender's Ed25519 public key for (user id, signing key id), or nil if unknown.
    /// - Throws: see docs/PROTOCOL.md "Error codes": `.unknownRecipientKey`, `.openFailed` (every decryption
    ///   failure), `.malformedMessage`, `.unknownSender`, `.badSignature`.
    public static func open(
        _ envelope: Envelope,
        deviceKey: (KeyID) -> DevicePrivateKey?,
        signingKey: (_ userID: String, _ keyID: KeyID) -> SigningPublicKey?
    ) throws(E2EEError) -> OpenedPush {
        guard let key = deviceKey(envelope.recipientKeyID), key.suite == envelope.suite else {
            throw E2EEError(
                .unknownRecipientKey,
                "no \(envelope.suite.name) device key \(envelope.recipientKeyID) here (reinstalled or rotated?): the sender must fetch this device's current card"
            )
        }
        let header = envelope.header  // built once: the AEAD's aad and part of the signed bytes
        let padded = try envelope.suite.primitive.open(
            envelope.ciphertext,
            encapsulatedKey: envelope.encapsulatedKey,
            privateKey: key,
            info: WireProtocol.hpkeInfo(suite: envelope.suite, recipientKeyID: envelope.recipientKeyID),
            aad: header
        )
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
            bucket: envelope.ciphertext.count - envelope.suite.tagLength
        )
    }
}
