/// The envelope, the only thing in clear besides the placeholder (docs/PROTOCOL.md, "Envelope"):
///
/// ```
/// version u8 | suite u16 | recipient_key_id [8] | enc [32] | ciphertext [bucket + 16]
/// ```
public struct Envelope: Sendable, Hashable {
    public var version: UInt8
    public var suite: UInt16
    public var recipientKeyID: KeyID
    /// The HPKE encapsulated key (the sender's ephemeral X25519 public key).
    public var encapsulatedKey: [UInt8]
    /// The HPKE ciphertext of the padded inner message, with its 16-byte tag.
    public var ciphertext: [UInt8]

    /// version (1) + suite (2) + key id (8) + enc (32).
    public static let headerLength = 1 + 2 + KeyID.length + HPKE.nenc

    /// The clear header: the HPKE `aad`.
    var header: [UInt8] {
        [self.version] + HPKE.i2osp(self.suite) + self.recipientKeyID.bytes + self.encapsulatedKey
    }

    /// The envelope bytes.
    public var serialized: [UInt8] { self.header + self.ciphertext }

    init(recipientKeyID: KeyID, encapsulatedKey: [UInt8], ciphertext: [UInt8]) {
        self.version = WireProtocol.version
        self.suite = WireProtocol.suite
        self.recipientKeyID = recipientKeyID
        self.encapsulatedKey = encapsulatedKey
        self.ciphertext = ciphertext
    }

    /// Parses envelope bytes.
    ///
    /// Checks in this order, each with its own code: at least one byte (`.malformedEnvelope`), the version
    /// (`.unsupportedVersion`), the full header (`.malformedEnvelope`), the suite (`.unsupportedSuite`), and a
    /// ciphertext length equal to a padding bucket + 16 (`.malformedEnvelope`).
    public init(parsing bytes: [UInt8]) throws(E2EEError) {
        guard let version = bytes.first else { throw E2EEError.malformed("empty envelope") }
        guard version == WireProtocol.version else {
            throw E2EEError(
                .unsupportedVersion,
                "envelope version \(version) is not supported (this implementation speaks \(WireProtocol.version)); update the app"
            )
        }
        guard bytes.count >= Envelope.headerLength else { throw E2EEError.malformed("truncated header") }
        let suite = UInt16(bytes[1]) << 8 | UInt16(bytes[2])
        guard suite == WireProtocol.suite else {
            throw E2EEError(.unsupportedSuite, "suite 0x\(Hex.encode(HPKE.i2osp(suite))) is not supported")
        }
        let ciphertext = Array(bytes[Envelope.headerLength...])
        guard WireProtocol.paddingBuckets.contains(ciphertext.count - Primitives.chachaTagLength) else {
            throw E2EEError.malformed("ciphertext of \(ciphertext.count) bytes matches no padding bucket")
        }
        self.version = version
        self.suite = suite
        self.recipientKeyID = try KeyID(bytes: bytes[3..<11])
        self.encapsulatedKey = Array(bytes[11..<Envelope.headerLength])
        self.ciphertext = ciphertext
    }
}
