#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A sealed push: the APNs body bytes and what went into them.
public struct SealedPush: Sendable, Hashable {
    /// The exact APNs body (ASCII JSON).
    public let body: [UInt8]
    public let envelope: Envelope
    /// The padding bucket the inner message was padded to.
    public let bucket: Int
    public let message: InnerMessage

    /// The body as text.
    public var bodyString: String { String(decoding: self.body, as: UTF8.self) }
}

/// An opened, verified push.
public struct OpenedPush: Sendable, Hashable {
    public let message: InnerMessage
    /// The device key the envelope was sealed for.
    public let recipientKeyID: KeyID
    /// The padding bucket of the envelope.
    public let bucket: Int
}

/// Seals inner messages into APNs bodies and opens them again (docs/PROTOCOL.md, "Sealing" and "Opening").
public enum PushPayload: Sendable {
    /// Seals `message` for one recipient device key, signed by `signingKey`.
    ///
    /// - Parameters:
    ///   - message: the inner message; its `senderSigningKeyID` must be `signingKey`'s key id.
    ///   - recipient: the recipient's device key (a card's newest key).
    ///   - signingKey: the sender's Ed25519 key.
    /// - Returns: the sealed push, whose body is one of the fixed lengths of ``WireProtocol/paddingBuckets``.
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
                "the message is \(plaintext.count) bytes once signed; the largest that fits APNs' 4,096-byte limit is \(WireProtocol.paddingBuckets.last! - 1) bytes"
            )
        }
        var padded = try Primitives.pad(plaintext, blockSize: bucket)
        defer { secureWipe(&padded) }
        precondition(padded.count == bucket)
        let ciphertext = try context.seal(padded, authenticating: header)
        let envelope = Envelope(recipientKeyID: recipientKeyID, encapsulatedKey: enc, ciphertext: ciphertext)
        let body = Self.body(for: envelope)
        return SealedPush(body: body, envelope: envelope, bucket: bucket, message: message)
    }

    /// The uniform APNs body of docs/PROTOCOL.md §4 that carries `envelope`: the fixed placeholder alert, then the
    /// envelope in base64. A relay that receives envelopes frames them with this, byte for byte as a sender would.
    ///
    /// - Parameter envelope: A parsed envelope (its ciphertext is a padding bucket + 16 bytes, so the body fits).
    /// - Returns: The body bytes (2,233 or 4,093 bytes).
    public static func body(for envelope: Envelope) -> [UInt8] {
        let body = Array(
            (WireProtocol.bodyPrefix + Data(envelope.serialized).base64EncodedString() + WireProtocol.bodySuffix).utf8
        )
        precondition(body.count <= WireProtocol.apnsMaximumBodyLength)
        return body
    }

    /// Extracts the envelope from an APNs body.
    ///
    /// - Throws: `.tooLarge` for a body above 4,096 bytes; `.malformedEnvelope` for bad JSON or base64;
    ///   `.foreignPayload` for JSON without our key; then what ``Envelope/init(parsing:)`` throws.
    public static func envelope(fromBody body: [UInt8]) throws(E2EEError) -> Envelope {
        guard body.count <= WireProtocol.apnsMaximumBodyLength else {
            throw E2EEError(.tooLarge, "the APNs body is \(body.count) bytes; APNs allows 4,096")
        }
        // Fast path: the canonical body this package sends is the fixed prefix, base64 characters, the fixed
        // suffix. It is exactly the JSON object the general path would parse, so the outcome is the same.
        if let value = Self.canonicalEnvelopeText(body) {
            guard let bytes = Data(base64Encoded: value), bytes.base64EncodedString() == value else {
                throw E2EEError.malformed("the envelope is not canonical base64")
            }
            return try Envelope(parsing: Array(bytes))
        }
        // §4: invalid UTF-8 anywhere in the body is malformed, even inside a value no one reads (a JSON parser
        // checks only the strings it decodes).
        guard String(validating: body, as: UTF8.self) != nil else {
            throw E2EEError.malformed("the body is not valid UTF-8")
        }
        let value: String
        do {
            let decoded = try JSONDecoder().decode(BodyShape.self, from: Data(body))
            guard let envelope = decoded.envelope else {
                throw E2EEError(.foreignPayload, "the push carries no \"\(WireProtocol.payloadKey)\" key: not ours")
            }
            value = envelope
        } catch let error as E2EEError {
            throw error
        } catch {
            throw E2EEError.malformed("the body is not a JSON object with a string \"\(WireProtocol.payloadKey)\"")
        }
        // Strict base64: standard alphabet, padding, no whitespace, and canonical (the unused low bits of the last
        // character are zero): the text must be exactly the encoding of the bytes it decodes to.
        guard let bytes = Data(base64Encoded: value), bytes.base64EncodedString() == value else {
            throw E2EEError.malformed("the envelope is not canonical base64")
        }
        return try Envelope(parsing: Array(bytes))
    }

    private static let prefixBytes = Array(WireProtocol.bodyPrefix.utf8)
    private static let suffixBytes = Array(WireProtocol.bodySuffix.utf8)

    /// The base64 text of a body in exactly the canonical form of docs/PROTOCOL.md §4, or nil.
    static func canonicalEnvelopeText(_ body: [UInt8]) -> String? {
        let p = prefixBytes.count
        let s = suffixBytes.count
        guard body.count > p + s, body.starts(with: prefixBytes), body[(body.count - s)...].elementsEqual(suffixBytes)
        else { return nil }
        let middle = body[p..<(body.count - s)]
        for c in middle {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
                continue
            default:
                return nil
            }
        }
        return String(decoding: middle, as: UTF8.self)
    }

    /// Opens an APNs body: parses, decrypts, unpads, decodes and verifies.
    ///
    /// - Parameters:
    ///   - body: the APNs body bytes.
    ///   - deviceKey: returns the device's private key for a key id, or nil if none (or past its grace period).
    ///   - signingKey: returns the sender's Ed25519 public key for (user id, signing key id), or nil if unknown.
    /// - Throws: see docs/PROTOCOL.md "Error codes": `.tooLarge`, `.malformedEnvelope`, `.foreignPayload`,
    ///   `.unsupportedVersion`, `.unsupportedSuite`, `.unknownRecipientKey`, `.openFailed` (every decryption
    ///   failure), `.malformedMessage`, `.unknownSender`, `.badSignature`.
    public static func open(
        body: [UInt8],
        deviceKey: (KeyID) -> X25519PrivateKey?,
        signingKey: (_ userID: String, _ keyID: KeyID) -> SigningPublicKey?
    ) throws(E2EEError) -> OpenedPush {
        try self.open(try self.envelope(fromBody: body), deviceKey: deviceKey, signingKey: signingKey)
    }

    /// Opens a parsed envelope (see ``open(body:deviceKey:signingKey:)``).
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

/// The one key we read. Present but not a string (a number, null, an object) is malformed; absent is foreign.
private struct BodyShape: Decodable {
    var envelope: String?
    enum CodingKeys: String, CodingKey { case envelope = "e2ee" }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.envelope = container.contains(.envelope) ? try container.decode(String.self, forKey: .envelope) : nil
    }
}
