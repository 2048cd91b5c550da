/// A crypto suite: the HPKE KEM, KDF and AEAD an envelope is sealed with, and every length on the wire that follows
/// from them (docs/PROTOCOL.md §2, §5).
///
/// The suite is a value: the envelope's header length, a device key's size and key id, and the padding buckets a
/// transport offers (``PaddingTable``) all come from it. Adding a suite is one primitive (a ``SuitePrimitive`` in a
/// folder of its own) plus one entry in ``all``, then docs, vectors and tests.
///
/// Signatures are not part of the suite: every suite signs inner messages with Ed25519 (§7).
public struct CryptoSuite: Sendable, Hashable, CustomStringConvertible {
    /// The envelope's `suite` field (§5), also written with each device key in device lists and identity files.
    public let id: UInt16
    /// The name people type (`--suite classical`) and read in messages.
    public let name: String
    /// RFC 9180 `kem_id`, `kdf_id`, `aead_id`.
    public let kemID: UInt16
    public let kdfID: UInt16
    public let aeadID: UInt16
    /// RFC 9180 `Nenc`: the length of the encapsulated key in every envelope of this suite.
    public let encapsulatedKeyLength: Int
    /// The length of a device public key (`Npk`).
    public let publicKeyLength: Int
    /// The length of the secret a device keeps for a device key (an X25519 scalar, an X-Wing seed).
    public let secretKeyLength: Int
    /// The AEAD tag length (`Nt`).
    public let tagLength: Int
    /// The `alg` byte of a device key's key id (§3).
    public let keyIDAlgorithm: UInt8
    /// The HPKE implementation of this suite.
    let primitive: any SuitePrimitive

    init(
        id: UInt16,
        name: String,
        kemID: UInt16,
        kdfID: UInt16,
        aeadID: UInt16,
        encapsulatedKeyLength: Int,
        publicKeyLength: Int,
        secretKeyLength: Int,
        tagLength: Int,
        keyIDAlgorithm: UInt8,
        primitive: any SuitePrimitive
    ) {
        self.id = id
        self.name = name
        self.kemID = kemID
        self.kdfID = kdfID
        self.aeadID = aeadID
        self.encapsulatedKeyLength = encapsulatedKeyLength
        self.publicKeyLength = publicKeyLength
        self.secretKeyLength = secretKeyLength
        self.tagLength = tagLength
        self.keyIDAlgorithm = keyIDAlgorithm
        self.primitive = primitive
    }

    /// The clear envelope header of this suite: version (1) + suite (2) + recipient key id (8) + enc (`Nenc`).
    public var headerLength: Int { 1 + 2 + KeyID.length + self.encapsulatedKeyLength }

    /// The suite id as 4 hex digits (`0x0001`), for messages.
    public var idText: String { "0x" + Hex.encode([UInt8(self.id >> 8), UInt8(self.id & 0xff)]) }

    public var description: String { "\(self.name) (suite \(self.idText))" }

    public static func == (lhs: CryptoSuite, rhs: CryptoSuite) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(self.id) }

    // MARK: the table

    /// Every suite this implementation speaks, in id order.
    public static let all: [CryptoSuite] = [.classical]

    /// The suite with envelope id `id`, or nil when this implementation does not speak it.
    public static func withID(_ id: UInt16) -> CryptoSuite? {
        all.first { $0.id == id }
    }

    /// The suite named `name` (``name``), or nil.
    public static func named(_ name: String) -> CryptoSuite? {
        all.first { $0.name == name }
    }
}
