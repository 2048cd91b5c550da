/// An X25519 public key (32 bytes), as used by HPKE's DHKEM(X25519, HKDF-SHA256).
public struct X25519PublicKey: Sendable, Hashable {
    /// The 32 raw bytes (RFC 7748 encoding; this is also HPKE's `SerializePublicKey`).
    public let rawRepresentation: [UInt8]

    /// Creates a public key from its 32 raw bytes.
    ///
    /// - Throws: ``E2EEError/Code/invalidKey`` when the size is not 32 bytes.
    public init(rawRepresentation: some Collection<UInt8>) throws(E2EEError) {
        let bytes = Array(rawRepresentation)
        guard bytes.count == Primitives.x25519KeyLength else {
            throw E2EEError(.invalidKey, "an X25519 public key is 32 bytes, got \(bytes.count)")
        }
        self.rawRepresentation = bytes
    }

    /// The key id of this public key (see ``KeyID``).
    public var keyID: KeyID { KeyID(deriving: .x25519, publicKey: self.rawRepresentation) }
}

/// An X25519 private key. The secret scalar lives in ``SecureBytes`` and is wiped when released.
public struct X25519PrivateKey: Sendable, CustomStringConvertible {
    let secret: SecureBytes
    /// The matching public key.
    public let publicKey: X25519PublicKey

    /// Wraps a 32-byte secret scalar.
    ///
    /// - Throws: ``E2EEError/Code/invalidKey`` when the secret is not 32 bytes.
    public init(secret: SecureBytes) throws(E2EEError) {
        self.secret = secret
        self.publicKey = try X25519PublicKey(rawRepresentation: Primitives.x25519PublicKey(secret: secret))
    }

    /// A new random key.
    public static func generate() -> X25519PrivateKey {
        // A 32-byte random scalar always yields a public key.
        try! X25519PrivateKey(secret: .random(count: Primitives.x25519KeyLength))
    }

    /// HPKE `DeriveKeyPair(ikm)` for DHKEM(X25519, HKDF-SHA256) (RFC 9180 7.1.3).
    public init(derivingFrom ikm: SecureBytes) throws(E2EEError) {
        let prk = ikm.withUnsafeBytes {
            HPKE.labeledExtract(salt: [], label: "dkp_prk", ikm: Array($0), suite: HPKE.kemSuiteID)
        }
        let sk = try HPKE.labeledExpand(prk: prk, label: "sk", info: [], length: 32, suite: HPKE.kemSuiteID)
        try self.init(secret: sk)
    }

    public var description: String { "X25519PrivateKey(<redacted>, public: \(self.publicKey.keyID))" }
}
