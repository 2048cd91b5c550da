/// An Ed25519 public key (32 bytes): verifies a sender's signatures.
public struct SigningPublicKey: Sendable, Hashable {
    /// The 32 raw bytes (RFC 8032 encoding).
    public let rawRepresentation: [UInt8]

    /// Wraps 32 raw bytes. - Throws: `.invalidKey` for another length.
    public init(rawRepresentation: some Collection<UInt8>) throws(E2EEError) {
        let bytes = Array(rawRepresentation)
        guard bytes.count == Primitives.ed25519PublicKeyLength else {
            throw E2EEError(.invalidKey, "an Ed25519 public key is 32 bytes, got \(bytes.count)")
        }
        self.rawRepresentation = bytes
    }

    /// The key id of this signing key.
    public var keyID: KeyID { KeyID(deriving: .ed25519, publicKey: self.rawRepresentation) }

    /// Verifies a detached signature. Non-canonical and small-order encodings are rejected (libsodium).
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        Primitives.ed25519Verify(publicKey: self.rawRepresentation, message: message, signature: signature)
    }
}

/// An Ed25519 private key, kept as its 32-byte seed in ``SecureBytes``.
public struct SigningPrivateKey: Sendable, CustomStringConvertible {
    let seed: SecureBytes
    let expandedSecretKey: SecureBytes
    /// The matching public key.
    public let publicKey: SigningPublicKey

    /// Creates the key of a 32-byte seed. - Throws: `.invalidKey` for another length.
    public init(seed: SecureBytes) throws(E2EEError) {
        let (publicKey, secretKey) = try Primitives.ed25519KeyPair(seed: seed)
        self.seed = seed
        self.expandedSecretKey = secretKey
        self.publicKey = try SigningPublicKey(rawRepresentation: publicKey)
    }

    /// A new random key.
    public static func generate() -> SigningPrivateKey {
        try! SigningPrivateKey(seed: .random(count: Primitives.ed25519SeedLength))
    }

    /// Signs `message` (Ed25519, deterministic).
    public func signature(for message: [UInt8]) throws(E2EEError) -> [UInt8] {
        try Primitives.ed25519Sign(secretKey: self.expandedSecretKey, message: message)
    }

    public var description: String { "SigningPrivateKey(<redacted>, public: \(self.publicKey.keyID))" }
}
