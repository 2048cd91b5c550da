extension CryptoSuite {
    /// Suite 0x0001: HPKE DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20-Poly1305 on libsodium
    /// (docs/PROTOCOL.md §2). Device keys are X25519 keys (key id `alg` 0x20).
    public static let classical = CryptoSuite(
        id: 0x0001,
        name: "classical",
        kemID: 0x0020,
        kdfID: 0x0001,
        aeadID: 0x0003,
        encapsulatedKeyLength: Primitives.x25519KeyLength,
        publicKeyLength: Primitives.x25519KeyLength,
        secretKeyLength: Primitives.x25519KeyLength,
        tagLength: Primitives.chachaTagLength,
        keyIDAlgorithm: KeyID.Algorithm.x25519.rawValue,
        primitive: ClassicalSuitePrimitive()
    )
}

/// The classical suite's HPKE: this folder's libsodium ``HPKE`` in mode_base.
struct ClassicalSuitePrimitive: SuitePrimitive {
    func makeKey(secret: SecureBytes) throws(E2EEError) -> (publicKey: [UInt8], expanded: (any Sendable)?) {
        let key = try X25519PrivateKey(secret: secret)
        return (key.publicKey.rawRepresentation, key)
    }

    func generateSecret() -> SecureBytes {
        .random(count: Primitives.x25519KeyLength)
    }

    func seal(
        to publicKey: [UInt8],
        info: [UInt8],
        ephemeral: SecureBytes?,
        plaintext: (_ encapsulatedKey: [UInt8]) throws(E2EEError) -> (aad: [UInt8], plaintext: [UInt8])
    ) throws(E2EEError) -> (encapsulatedKey: [UInt8], ciphertext: [UInt8]) {
        let recipient = try X25519PublicKey(rawRepresentation: publicKey)
        var context = try HPKE.SenderContext(
            recipient: recipient,
            info: info,
            ephemeral: try ephemeral.map { (secret) throws(E2EEError) in try X25519PrivateKey(secret: secret) }
                ?? .generate()
        )
        var (aad, padded) = try plaintext(context.encapsulatedKey)
        defer { secureWipe(&padded) }
        return (context.encapsulatedKey, try context.seal(padded, authenticating: aad))
    }

    func open(
        _ ciphertext: [UInt8],
        encapsulatedKey: [UInt8],
        privateKey: DevicePrivateKey,
        info: [UInt8],
        aad: [UInt8]
    ) throws(E2EEError) -> SecureBytes {
        guard let key = privateKey.expanded as? X25519PrivateKey else { throw E2EEError.openFailed() }
        var context = try HPKE.RecipientContext(encapsulatedKey: encapsulatedKey, recipient: key, info: info)
        return try context.open(ciphertext, authenticating: aad)
    }
}
