extension HPKE {
    /// The sender's side of an HPKE context: seals messages in order and exports secrets.
    public struct SenderContext: Sendable {
        /// The encapsulated key to send to the recipient.
        public let encapsulatedKey: [UInt8]
        let schedule: KeySchedule
        private(set) var sequenceNumber: UInt64 = 0

        /// Sets up a sender context (RFC 9180 5.1 SetupBaseS / SetupPSKS / SetupAuthS / SetupAuthPSKS).
        ///
        /// - Parameters:
        ///   - recipient: the recipient's public key.
        ///   - info: application-supplied information bound into the key schedule.
        ///   - sender: the sender's static key for the auth modes, or nil.
        ///   - psk: a pre-shared key for the psk modes, or nil.
        /// - Throws: ``E2EEError/Code/invalidKey`` for a low-order recipient key; `.invalidArgument` for bad psk
        ///   inputs.
        public init(
            recipient: X25519PublicKey,
            info: [UInt8],
            sender: X25519PrivateKey? = nil,
            psk: PreSharedKey? = nil
        ) throws(E2EEError) {
            try self.init(recipient: recipient, info: info, sender: sender, psk: psk, ephemeral: .generate())
        }

        /// Deterministic setup with a given ephemeral key: for test vectors only. Reusing an ephemeral key breaks
        /// HPKE's security.
        @_spi(Vectors)
        public init(
            recipient: X25519PublicKey,
            info: [UInt8],
            sender: X25519PrivateKey? = nil,
            psk: PreSharedKey? = nil,
            ephemeral: X25519PrivateKey
        ) throws(E2EEError) {
            let (sharedSecret, enc) = try HPKE.encapsulate(recipient: recipient, sender: sender, ephemeral: ephemeral)
            self.encapsulatedKey = enc
            self.schedule = try HPKE.keySchedule(
                mode: HPKE.mode(sender: sender != nil, psk: psk),
                sharedSecret: sharedSecret,
                info: info,
                psk: psk
            )
        }

        /// Seals the next message (RFC 9180 5.2 ContextS.Seal).
        public mutating func seal(_ plaintext: [UInt8], authenticating aad: [UInt8] = []) throws(E2EEError) -> [UInt8] {
            try plaintext.withBytes { (p: UnsafeRawBufferPointer) throws(E2EEError) in
                try self.seal(p, authenticating: aad)
            }
        }

        /// Seals the next message from raw bytes (for secret plaintexts held in ``SecureBytes``).
        public mutating func seal(
            _ plaintext: UnsafeRawBufferPointer,
            authenticating aad: [UInt8]
        ) throws(E2EEError)
            -> [UInt8]
        {
            let nonce = try HPKE.nonce(base: self.schedule.baseNonce, sequence: self.sequenceNumber)
            let ct = try Primitives.chachaSeal(key: self.schedule.key, nonce: nonce, aad: aad, plaintext: plaintext)
            self.sequenceNumber += 1
            return ct
        }

        /// Exports a secret (RFC 9180 5.3).
        public func exportSecret(context: [UInt8], length: Int) throws(E2EEError) -> SecureBytes {
            try HPKE.labeledExpand(
                prk: self.schedule.exporterSecret,
                label: "sec",
                info: context,
                length: length,
                suite: HPKE.hpkeSuiteID
            )
        }
    }

    /// The recipient's side of an HPKE context: opens messages in order and exports secrets.
    public struct RecipientContext: Sendable {
        let schedule: KeySchedule
        private(set) var sequenceNumber: UInt64 = 0

        /// Sets up a recipient context (RFC 9180 5.1 SetupBaseR / SetupPSKR / SetupAuthR / SetupAuthPSKR).
        ///
        /// - Throws: ``E2EEError/Code/openFailed`` for any `enc` that cannot be decapsulated (wrong size,
        ///   low-order point); `.invalidArgument` for bad psk inputs.
        public init(
            encapsulatedKey: [UInt8],
            recipient: X25519PrivateKey,
            info: [UInt8],
            senderPublicKey: X25519PublicKey? = nil,
            psk: PreSharedKey? = nil
        ) throws(E2EEError) {
            let sharedSecret = try HPKE.decapsulate(
                enc: encapsulatedKey,
                recipient: recipient,
                senderPublicKey: senderPublicKey
            )
            self.schedule = try HPKE.keySchedule(
                mode: HPKE.mode(sender: senderPublicKey != nil, psk: psk),
                sharedSecret: sharedSecret,
                info: info,
                psk: psk
            )
        }

        /// Opens the next message (RFC 9180 5.2 ContextR.Open). Any failure is ``E2EEError/Code/openFailed``.
        public mutating func open(
            _ ciphertext: [UInt8],
            authenticating aad: [UInt8] = []
        ) throws(E2EEError)
            -> SecureBytes
        {
            let nonce = try HPKE.nonce(base: self.schedule.baseNonce, sequence: self.sequenceNumber)
            let pt = try Primitives.chachaOpen(key: self.schedule.key, nonce: nonce, aad: aad, ciphertext: ciphertext)
            self.sequenceNumber += 1
            return pt
        }

        /// Exports a secret (RFC 9180 5.3).
        public func exportSecret(context: [UInt8], length: Int) throws(E2EEError) -> SecureBytes {
            try HPKE.labeledExpand(
                prk: self.schedule.exporterSecret,
                label: "sec",
                info: context,
                length: length,
                suite: HPKE.hpkeSuiteID
            )
        }
    }

    /// ComputeNonce(seq) = base_nonce XOR I2OSP(seq, Nn) (RFC 9180 5.2).
    static func nonce(base: [UInt8], sequence: UInt64) throws(E2EEError) -> [UInt8] {
        guard sequence < UInt64.max else { throw E2EEError(.cryptoFailure, "HPKE: message limit reached") }
        var nonce = base
        var seq = sequence
        var i = nonce.count - 1
        while seq > 0 {
            nonce[i] ^= UInt8(seq & 0xff)
            seq >>= 8
            i -= 1
        }
        return nonce
    }

    // MARK: single-shot (RFC 9180 6)

    /// Single-shot seal: sets up a sender context and seals one message.
    ///
    /// - Returns: the encapsulated key and the ciphertext (with its 16-byte tag).
    public static func seal(
        _ plaintext: [UInt8],
        to recipient: X25519PublicKey,
        info: [UInt8],
        aad: [UInt8] = [],
        sender: X25519PrivateKey? = nil,
        psk: PreSharedKey? = nil
    ) throws(E2EEError) -> (encapsulatedKey: [UInt8], ciphertext: [UInt8]) {
        var context = try SenderContext(recipient: recipient, info: info, sender: sender, psk: psk)
        return (context.encapsulatedKey, try context.seal(plaintext, authenticating: aad))
    }

    /// Single-shot open.
    ///
    /// - Throws: ``E2EEError/Code/openFailed`` for every failure to open.
    public static func open(
        _ ciphertext: [UInt8],
        encapsulatedKey: [UInt8],
        recipient: X25519PrivateKey,
        info: [UInt8],
        aad: [UInt8] = [],
        senderPublicKey: X25519PublicKey? = nil,
        psk: PreSharedKey? = nil
    ) throws(E2EEError) -> SecureBytes {
        var context = try RecipientContext(
            encapsulatedKey: encapsulatedKey,
            recipient: recipient,
            info: info,
            senderPublicKey: senderPublicKey,
            psk: psk
        )
        return try context.open(ciphertext, authenticating: aad)
    }
}
