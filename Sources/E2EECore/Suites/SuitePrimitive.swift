/// The HPKE of one crypto suite, single-shot in mode_base (docs/PROTOCOL.md §8, §9): what a suite's folder
/// implements so that the rest of E2EECore never names a KEM or an AEAD.
protocol SuitePrimitive: Sendable {
    /// The public key of a device key's secret, and whatever the suite keeps to open quickly (an expanded key).
    ///
    /// - Throws: `.invalidKey` when the secret is not a valid key of the suite.
    func makeKey(secret: SecureBytes) throws(E2EEError) -> (publicKey: [UInt8], expanded: (any Sendable)?)

    /// A fresh random device key secret.
    func generateSecret() -> SecureBytes

    /// SetupBaseS(pkR, info) then one Seal(aad, plaintext), where the plaintext and `aad` are made once `enc` is
    /// known (the signature of §8 covers the header, which holds `enc`). The primitive wipes the plaintext after
    /// sealing it.
    ///
    /// - Parameters:
    ///   - ephemeral: the encapsulation randomness, for test vectors only; nil draws it fresh. A suite whose library
    ///     cannot encapsulate deterministically refuses a non-nil value with `.invalidArgument`.
    ///   - plaintext: given `enc`, returns the AEAD's `aad` and the plaintext to seal.
    /// - Returns: `enc` (``CryptoSuite/encapsulatedKeyLength`` bytes) and the ciphertext with its tag.
    /// - Throws: `.invalidKey` for a recipient key the KEM refuses; what `plaintext` throws.
    func seal(
        to publicKey: [UInt8],
        info: [UInt8],
        ephemeral: SecureBytes?,
        plaintext: (_ encapsulatedKey: [UInt8]) throws(E2EEError) -> (aad: [UInt8], plaintext: [UInt8])
    ) throws(E2EEError) -> (encapsulatedKey: [UInt8], ciphertext: [UInt8])

    /// SetupBaseR(enc, skR, info) then one Open(aad, ciphertext).
    ///
    /// - Throws: `.openFailed` for every failure, whatever its cause (no oracle).
    func open(
        _ ciphertext: [UInt8],
        encapsulatedKey: [UInt8],
        privateKey: DevicePrivateKey,
        info: [UInt8],
        aad: [UInt8]
    ) throws(E2EEError) -> SecureBytes
}
