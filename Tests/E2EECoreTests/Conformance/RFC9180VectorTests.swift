import Testing

@testable @_spi(Vectors) import E2EECore

/// One entry of the CFRG / RFC 9180 Appendix A test vectors (`Fixtures/rfc9180/hpke-x25519-chacha.json`).
struct HPKEVector: Decodable, Sendable {
    struct Encryption: Decodable, Sendable {
        let aad: HexBytes
        let ct: HexBytes
        let nonce: HexBytes
        let pt: HexBytes
    }

    struct Export: Decodable, Sendable {
        let exporterContext: HexBytes
        let length: Int
        let exportedValue: HexBytes

        enum CodingKeys: String, CodingKey {
            case exporterContext = "exporter_context"
            case length = "L"
            case exportedValue = "exported_value"
        }
    }

    let mode: UInt8
    let kemID: UInt16
    let kdfID: UInt16
    let aeadID: UInt16
    let info: HexBytes
    let ikmR: HexBytes
    let ikmE: HexBytes
    let ikmS: HexBytes?
    let skRm: HexBytes
    let skEm: HexBytes
    let skSm: HexBytes?
    let pkRm: HexBytes
    let pkEm: HexBytes
    let pkSm: HexBytes?
    let psk: HexBytes?
    let pskID: HexBytes?
    let enc: HexBytes
    let sharedSecret: HexBytes
    let key: HexBytes
    let baseNonce: HexBytes
    let exporterSecret: HexBytes
    let encryptions: [Encryption]
    let exports: [Export]

    enum CodingKeys: String, CodingKey {
        case mode, info, ikmR, ikmE, ikmS, skRm, skEm, skSm, pkRm, pkEm, pkSm, psk, enc, key, encryptions, exports
        case kemID = "kem_id"
        case kdfID = "kdf_id"
        case aeadID = "aead_id"
        case pskID = "psk_id"
        case sharedSecret = "shared_secret"
        case baseNonce = "base_nonce"
        case exporterSecret = "exporter_secret"
    }

    static func loadAll() throws -> [HPKEVector] {
        try VectorFiles.load([HPKEVector].self, "rfc9180/hpke-x25519-chacha.json")
    }

    var hpkeMode: HPKE.Mode? { HPKE.Mode(rawValue: self.mode) }
    var isAuth: Bool { self.mode == HPKE.Mode.auth.rawValue || self.mode == HPKE.Mode.authPSK.rawValue }

    /// The psk of a psk-mode entry, or nil.
    var preSharedKey: HPKE.PreSharedKey? {
        guard let psk, let pskID else { return nil }
        return HPKE.PreSharedKey(key: SecureBytes(copying: psk.bytes), id: pskID.bytes)
    }
}

extension X25519PrivateKey {
    /// The secret scalar, copied out for comparison with a vector (tests only).
    var secretBytesForTesting: [UInt8] { self.secret.withUnsafeBytes { Array($0) } }
}

extension SecureBytes {
    /// The bytes, copied out for comparison with a vector (tests only).
    var bytesForTesting: [UInt8] { self.withUnsafeBytes { Array($0) } }
}

/// RFC 9180 conformance: every entry of the X25519 / HKDF-SHA256 / ChaCha20-Poly1305 vectors, all four modes,
/// every encryption in sequence and every export, from both the recipient's and the sender's side.
@Suite("RFC 9180 HPKE test vectors")
struct RFC9180VectorTests {
    /// 4 entries (modes 0-3) with 257 encryptions each: a silently skipped entry or encryption changes this.
    static let expectedEncryptions = 4 * 257
    static let expectedExports = 4 * 3

    @Test("the fixture holds exactly modes 0-3 of suite (0x0020, 0x0001, 0x0003)")
    func fixtureShape() throws {
        let vectors = try HPKEVector.loadAll()
        #expect(vectors.map(\.mode) == [0, 1, 2, 3])
        for vector in vectors {
            #expect(vector.kemID == 0x0020 && vector.kdfID == 0x0001 && vector.aeadID == 0x0003)
            #expect(vector.encryptions.count == 257, "mode \(vector.mode)")
            #expect(vector.exports.count == 3, "mode \(vector.mode)")
            #expect((vector.psk != nil) == (vector.mode == 1 || vector.mode == 3), "mode \(vector.mode)")
            #expect((vector.skSm != nil) == vector.isAuth, "mode \(vector.mode)")
        }
    }

    @Test("DeriveKeyPair(ikm) gives skXm and pkXm for the recipient, ephemeral and sender keys")
    func deriveKeyPair() throws {
        var checked = 0
        for vector in try HPKEVector.loadAll() {
            var pairs = [("R", vector.ikmR, vector.skRm, vector.pkRm), ("E", vector.ikmE, vector.skEm, vector.pkEm)]
            if let ikmS = vector.ikmS, let skSm = vector.skSm, let pkSm = vector.pkSm {
                pairs.append(("S", ikmS, skSm, pkSm))
            }
            for (name, ikm, sk, pk) in pairs {
                let key = try X25519PrivateKey(derivingFrom: SecureBytes(copying: ikm.bytes))
                #expect(key.secretBytesForTesting == sk.bytes, "mode \(vector.mode) sk\(name)m")
                #expect(key.publicKey.rawRepresentation == pk.bytes, "mode \(vector.mode) pk\(name)m")
                checked += 1
            }
        }
        // 4 entries x (R, E) + 2 auth entries x S.
        #expect(checked == 10)
    }

    @Test("recipient: setup with enc, open every ciphertext in sequence, export every value")
    func recipientSide() throws {
        var opened = 0
        var exported = 0
        for vector in try HPKEVector.loadAll() {
            let mode = try #require(vector.hpkeMode, "unknown mode \(vector.mode)")
            let recipient = try X25519PrivateKey(derivingFrom: SecureBytes(copying: vector.ikmR.bytes))
            let senderPublicKey = try vector.pkSm.map { try X25519PublicKey(rawRepresentation: $0.bytes) }

            // The intermediate values, so a mismatch says which step of the key schedule is wrong.
            let sharedSecret = try HPKE.decapsulate(
                enc: vector.enc.bytes,
                recipient: recipient,
                senderPublicKey: senderPublicKey
            )
            #expect(sharedSecret.bytesForTesting == vector.sharedSecret.bytes, "mode \(vector.mode) shared_secret")
            let schedule = try HPKE.keySchedule(
                mode: mode,
                sharedSecret: sharedSecret,
                info: vector.info.bytes,
                psk: vector.preSharedKey
            )
            #expect(schedule.key.bytesForTesting == vector.key.bytes, "mode \(vector.mode) key")
            #expect(schedule.baseNonce == vector.baseNonce.bytes, "mode \(vector.mode) base_nonce")
            #expect(
                schedule.exporterSecret.bytesForTesting == vector.exporterSecret.bytes,
                "mode \(vector.mode) exporter_secret"
            )

            var context = try HPKE.RecipientContext(
                encapsulatedKey: vector.enc.bytes,
                recipient: recipient,
                info: vector.info.bytes,
                senderPublicKey: senderPublicKey,
                psk: vector.preSharedKey
            )
            for (sequence, encryption) in vector.encryptions.enumerated() {
                #expect(
                    try HPKE.nonce(base: schedule.baseNonce, sequence: UInt64(sequence)) == encryption.nonce.bytes,
                    "mode \(vector.mode) seq \(sequence) nonce"
                )
                let plaintext = try context.open(encryption.ct.bytes, authenticating: encryption.aad.bytes)
                #expect(plaintext.bytesForTesting == encryption.pt.bytes, "mode \(vector.mode) seq \(sequence)")
                opened += 1
            }
            for export in vector.exports {
                let value = try context.exportSecret(context: export.exporterContext.bytes, length: export.length)
                #expect(
                    value.bytesForTesting == export.exportedValue.bytes,
                    "mode \(vector.mode) export context \(export.exporterContext)"
                )
                exported += 1
            }
        }
        #expect(opened == Self.expectedEncryptions)
        #expect(exported == Self.expectedExports)
    }

    @Test("sender: ephemeral from DeriveKeyPair(ikmE), enc equal, every seal gives the exact ciphertext")
    func senderSide() throws {
        var sealed = 0
        var exported = 0
        for vector in try HPKEVector.loadAll() {
            let recipient = try X25519PublicKey(rawRepresentation: vector.pkRm.bytes)
            let ephemeral = try X25519PrivateKey(derivingFrom: SecureBytes(copying: vector.ikmE.bytes))
            let sender = try vector.ikmS.map { try X25519PrivateKey(derivingFrom: SecureBytes(copying: $0.bytes)) }

            var context = try HPKE.SenderContext(
                recipient: recipient,
                info: vector.info.bytes,
                sender: sender,
                psk: vector.preSharedKey,
                ephemeral: ephemeral
            )
            #expect(context.encapsulatedKey == vector.enc.bytes, "mode \(vector.mode) enc")
            for (sequence, encryption) in vector.encryptions.enumerated() {
                let ciphertext = try context.seal(encryption.pt.bytes, authenticating: encryption.aad.bytes)
                #expect(ciphertext == encryption.ct.bytes, "mode \(vector.mode) seq \(sequence)")
                sealed += 1
            }
            for export in vector.exports {
                let value = try context.exportSecret(context: export.exporterContext.bytes, length: export.length)
                #expect(
                    value.bytesForTesting == export.exportedValue.bytes,
                    "mode \(vector.mode) export context \(export.exporterContext)"
                )
                exported += 1
            }
        }
        #expect(sealed == Self.expectedEncryptions)
        #expect(exported == Self.expectedExports)
    }

    @Test("a vector ciphertext with one bit flipped, or opened out of sequence, fails with openFailed")
    func tamperedAndOutOfOrder() throws {
        var checked = 0
        for vector in try HPKEVector.loadAll() {
            let recipient = try X25519PrivateKey(derivingFrom: SecureBytes(copying: vector.ikmR.bytes))
            let senderPublicKey = try vector.pkSm.map { try X25519PublicKey(rawRepresentation: $0.bytes) }
            func makeContext() throws -> HPKE.RecipientContext {
                try HPKE.RecipientContext(
                    encapsulatedKey: vector.enc.bytes,
                    recipient: recipient,
                    info: vector.info.bytes,
                    senderPublicKey: senderPublicKey,
                    psk: vector.preSharedKey
                )
            }
            let first = vector.encryptions[0]
            var flipped = first.ct.bytes
            flipped[flipped.count - 1] ^= 0x01
            var context = try makeContext()
            #expect(throws: E2EEError(.openFailed, "")) {
                try context.open(flipped, authenticating: first.aad.bytes)
            }
            // Sequence 1's ciphertext at sequence 0: the nonce differs.
            var fresh = try makeContext()
            let second = vector.encryptions[1]
            #expect(throws: E2EEError(.openFailed, "")) {
                try fresh.open(second.ct.bytes, authenticating: second.aad.bytes)
            }
            // Wrong info: the key schedule differs.
            var wrongInfo = try HPKE.RecipientContext(
                encapsulatedKey: vector.enc.bytes,
                recipient: recipient,
                info: vector.info.bytes + [0x00],
                senderPublicKey: senderPublicKey,
                psk: vector.preSharedKey
            )
            #expect(throws: E2EEError(.openFailed, "")) {
                try wrongInfo.open(first.ct.bytes, authenticating: first.aad.bytes)
            }
            checked += 1
        }
        #expect(checked == 4)
    }
}
