/// A device public key: what envelopes are sealed to, of one crypto suite (docs/PROTOCOL.md §3, §11.1).
public struct DevicePublicKey: Sendable, Hashable, CustomStringConvertible {
    /// The suite the key belongs to: envelopes sealed to it are of this suite.
    public let suite: CryptoSuite
    /// The public key's bytes (``CryptoSuite/publicKeyLength`` of them; HPKE's `SerializePublicKey`).
    public let rawRepresentation: [UInt8]

    /// Wraps a public key of `suite`.
    ///
    /// - Throws: ``E2EEError/Code/invalidKey`` when the size is not the suite's public key length.
    public init(suite: CryptoSuite, rawRepresentation: some Collection<UInt8>) throws(E2EEError) {
        let bytes = Array(rawRepresentation)
        guard bytes.count == suite.publicKeyLength else {
            throw E2EEError(
                .invalidKey,
                "a \(suite.name) device public key is \(suite.publicKeyLength) bytes, got \(bytes.count)"
            )
        }
        self.suite = suite
        self.rawRepresentation = bytes
    }

    /// The key id of this public key (see ``KeyID``), with its suite's `alg` byte.
    public var keyID: KeyID { KeyID(deriving: self.suite.keyIDAlgorithm, publicKey: self.rawRepresentation) }

    public var description: String { "DevicePublicKey(\(self.suite.name), \(self.keyID))" }
}

/// A device private key of one crypto suite. Its secret lives in ``SecureBytes`` and is wiped when released.
public struct DevicePrivateKey: Sendable, CustomStringConvertible {
    /// The secret the device keeps (an X25519 scalar, an X-Wing seed): what the identity file stores.
    let secret: SecureBytes
    /// The matching public key (its suite is this key's suite).
    public let publicKey: DevicePublicKey
    /// What the suite's primitive keeps to open without re-deriving the key each time.
    let expanded: (any Sendable)?

    /// The key's suite.
    public var suite: CryptoSuite { self.publicKey.suite }
    /// The key id of the public key.
    public var keyID: KeyID { self.publicKey.keyID }

    /// Wraps a secret of `suite`.
    ///
    /// - Throws: ``E2EEError/Code/invalidKey`` when the secret is not a valid secret of the suite.
    public init(suite: CryptoSuite, secret: SecureBytes) throws(E2EEError) {
        guard secret.count == suite.secretKeyLength else {
            throw E2EEError(
                .invalidKey,
                "a \(suite.name) device key secret is \(suite.secretKeyLength) bytes, got \(secret.count)"
            )
        }
        let (publicKey, expanded) = try suite.primitive.makeKey(secret: secret)
        self.secret = secret
        self.publicKey = try DevicePublicKey(suite: suite, rawRepresentation: publicKey)
        self.expanded = expanded
    }

    /// A new random key of `suite`.
    public static func generate(suite: CryptoSuite = .classical) -> DevicePrivateKey {
        // A fresh secret of the suite's length always makes a key.
        try! DevicePrivateKey(suite: suite, secret: suite.primitive.generateSecret())
    }

    public var description: String { "DevicePrivateKey(<redacted>, \(self.suite.name), public: \(self.keyID))" }
}
