/// The envelope, the only thing in clear besides the placeholder (docs/PROTOCOL.md, "Envelope"):
///
/// ```
/// version u8 | suite u16 | recipient_key_id [8] | enc [Nenc of the suite] | ciphertext [bucket + Nt]
/// ```
public struct Envelope: Sendable, Hashable {
    public var version: UInt8
    /// The crypto suite the envelope is sealed with: it fixes the length of `enc` and of the header.
    public var suite: CryptoSuite
    public var recipientKeyID: KeyID
    /// The HPKE encapsulated key (``CryptoSuite/encapsulatedKeyLength`` bytes).
    public var encapsulatedKey: [UInt8]
    /// The HPKE ciphertext of the padded inner message, with its tag.
    public var ciphertext: [UInt8]

    /// The clear header's length: version (1) + suite (2) + key id (8) + enc (`Nenc`).
    public var headerLength: Int { self.suite.headerLength }

    /// The clear header: the HPKE `aad`.
    var header: [UInt8] {
        Envelope.header(suite: self.suite, recipientKeyID: self.recipientKeyID, encapsulatedKey: self.encapsulatedKey)
    }

    static func header(suite: CryptoSuite, recipientKeyID: KeyID, encapsulatedKey: [UInt8]) -> [UInt8] {
        [WireProtocol.version] + HPKE.i2osp(suite.id) + recipientKeyID.bytes + encapsulatedKey
    }

    /// The envelope bytes.
    public var serialized: [UInt8] { self.header + self.ciphertext }

    init(suite: CryptoSuite, recipientKeyID: KeyID, encapsulatedKey: [UInt8], ciphertext: [UInt8]) {
        self.version = WireProtocol.version
        self.suite = suite
        self.recipientKeyID = recipientKeyID
        self.encapsulatedKey = encapsulatedKey
        self.ciphertext = ciphertext
    }

    /// Parses envelope bytes.
    ///
    /// Checks in this order, each with its own code (docs/PROTOCOL.md §5): at least one byte
    /// (`.malformedEnvelope`), the version (`.unsupportedVersion`), the suite id's two bytes (`.malformedEnvelope`),
    /// a suite this implementation speaks (`.unsupportedSuite`), the suite's full header (`.malformedEnvelope`), and a
    /// ciphertext length equal to one of the suite's padding buckets in `padding` + the tag (`.malformedEnvelope`).
    ///
    /// - Parameter padding: the padding buckets of the transport that carried the envelope.
    public init(parsing bytes: [UInt8], padding: PaddingTable) throws(E2EEError) {
        guard let version = bytes.first else { throw E2EEError.malformed("empty envelope") }
        guard version == WireProtocol.version else {
            throw E2EEError(
                .unsupportedVersion,
                "envelope version \(version) is not supported (this implementation speaks \(WireProtocol.version)); update the app"
            )
        }
        guard bytes.count >= 3 else { throw E2EEError.malformed("truncated header") }
        let suiteID = UInt16(bytes[1]) << 8 | UInt16(bytes[2])
        guard let suite = CryptoSuite.withID(suiteID) else {
            throw E2EEError(.unsupportedSuite, "suite 0x\(Hex.encode(HPKE.i2osp(suiteID))) is not supported")
        }
        let headerLength = suite.headerLength
        guard bytes.count >= headerLength else { throw E2EEError.malformed("truncated header") }
        let ciphertext = Array(bytes[headerLength...])
        guard padding.buckets(for: suite).contains(ciphertext.count - suite.tagLength) else {
            throw E2EEError.malformed(
                "ciphertext of \(ciphertext.count) bytes matches no padding bucket of suite \(suite.name)"
            )
        }
        self.version = version
        self.suite = suite
        self.recipientKeyID = try KeyID(bytes: bytes[3..<3 + KeyID.length])
        self.encapsulatedKey = Array(bytes[(3 + KeyID.length)..<headerLength])
        self.ciphertext = ciphertext
    }
}
