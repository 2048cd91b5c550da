/// An 8-byte key id derived from a public key: the first 8 bytes of
/// `SHA-256("e2ee-push/key-id/v1" || 0x00 || algorithm || publicKey)`, where `algorithm` is one byte: a device
/// key's suite's (``CryptoSuite/keyIDAlgorithm``, 0x20 for an X25519 key) or 0xED for an Ed25519 signing key
/// (docs/PROTOCOL.md, "Key ids").
///
/// Key ids let a device rotate keys: the envelope names the device key it was sealed for, and an inner message
/// names the signing key that signed it. They are not secret.
public struct KeyID: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    /// The algorithm a key id is derived for.
    public enum Algorithm: UInt8, Sendable {
        case x25519 = 0x20
        case ed25519 = 0xED
    }

    /// The length of a key id in bytes.
    public static let length = 8
    static let domain: [UInt8] = Array("e2ee-push/key-id/v1".utf8) + [0x00]

    /// The 8 raw bytes.
    public let bytes: [UInt8]

    /// Wraps 8 raw bytes. - Throws: `.invalidArgument` for another length.
    public init(bytes: some Collection<UInt8>) throws(E2EEError) {
        let array = Array(bytes)
        guard array.count == KeyID.length else {
            throw E2EEError.invalidArgument("a key id is \(KeyID.length) bytes, got \(array.count)")
        }
        self.bytes = array
    }

    /// Derives the key id of a public key.
    public init(deriving algorithm: Algorithm, publicKey: [UInt8]) {
        self.init(deriving: algorithm.rawValue, publicKey: publicKey)
    }

    /// Derives the key id of a public key with an `alg` byte (a suite's ``CryptoSuite/keyIDAlgorithm``).
    init(deriving algorithm: UInt8, publicKey: [UInt8]) {
        self.bytes = Array(Primitives.sha256(KeyID.domain + [algorithm] + publicKey).prefix(KeyID.length))
    }

    /// Parses 16 lowercase or uppercase hex digits.
    public init(hex: String) throws(E2EEError) {
        guard let bytes = Hex.decode(hex), bytes.count == KeyID.length else {
            throw E2EEError.invalidArgument("a key id is 16 hex digits, got \"\(hex.prefix(40))\"")
        }
        self.bytes = bytes
    }

    /// 16 lowercase hex digits.
    public var hex: String { Hex.encode(self.bytes) }
    public var description: String { self.hex }

    public static func < (lhs: KeyID, rhs: KeyID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }

    public init(from decoder: any Decoder) throws {
        let hex = try decoder.singleValueContainer().decode(String.self)
        self = try KeyID(hex: hex)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.hex)
    }
}
