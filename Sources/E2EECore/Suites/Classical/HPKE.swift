/// RFC 9180 Hybrid Public Key Encryption on libsodium, for the classical suite (``CryptoSuite/classical``):
/// DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20-Poly1305 (kem 0x0020, kdf 0x0001, aead 0x0003). Its ids and
/// `Nenc` are the suite's; other suites have primitives of their own (``SuitePrimitive``), and those on HKDF-SHA256
/// (the X-Wing suite) run this key schedule (``keySchedule``) with their own suite_id.
///
/// Built only on libsodium primitives (X25519, HMAC-SHA256 for HKDF, ChaCha20-Poly1305-IETF). All four modes
/// are supported (base, psk, auth, auth_psk), single-shot and through contexts, plus the secret export interface.
/// It interoperates with CryptoKit / swift-crypto `HPKE` for the same suite (tested).
public enum HPKE: Sendable {
    /// The HPKE mode (RFC 9180 5.1, table 1).
    public enum Mode: UInt8, Sendable {
        case base = 0x00
        case psk = 0x01
        case auth = 0x02
        case authPSK = 0x03
    }

    /// A pre-shared key and its id, for the psk modes. Both must be non-empty (RFC 9180 5.1 VerifyPSKInputs);
    /// RFC 9180 9.5 recommends at least 32 bytes of entropy in `key`.
    public struct PreSharedKey: Sendable {
        public let key: SecureBytes
        public let id: [UInt8]
        public init(key: SecureBytes, id: [UInt8]) {
            self.key = key
            self.id = id
        }
    }

    /// The suite this implementation computes: its ids name the labeled KDF's suites and `Nenc` sizes `enc`.
    static let suite = CryptoSuite.classical
    /// ChaCha20-Poly1305's key and nonce lengths and HKDF-SHA256's output length (RFC 9180 7.2, 7.3).
    static let nk = Primitives.chachaKeyLength
    static let nn = Primitives.chachaNonceLength
    static let nh = Primitives.hmacSHA256Length

    /// "KEM" || I2OSP(kem_id, 2)
    static let kemSuiteID: [UInt8] = Array("KEM".utf8) + i2osp(suite.kemID)
    /// This suite's key schedule suite_id (``hpkeSuiteID(of:)``).
    static let hpkeSuiteID: [UInt8] = hpkeSuiteID(of: suite)

    /// "HPKE" || I2OSP(kem_id, 2) || I2OSP(kdf_id, 2) || I2OSP(aead_id, 2): the suite_id of the key schedule
    /// (RFC 9180 5.1). Any suite whose KDF is HKDF-SHA256 runs its key schedule through ``keySchedule`` with its own.
    static func hpkeSuiteID(of suite: CryptoSuite) -> [UInt8] {
        Array("HPKE".utf8) + i2osp(suite.kemID) + i2osp(suite.kdfID) + i2osp(suite.aeadID)
    }
    private static let version: [UInt8] = Array("HPKE-v1".utf8)

    static func i2osp(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xff)] }

    // MARK: labeled KDF (RFC 9180 4)

    static func labeledExtract(salt: [UInt8], label: String, ikm: [UInt8], suite: [UInt8]) -> SecureBytes {
        Primitives.hkdfExtract(salt: salt, ikm: [version, suite, Array(label.utf8), ikm])
    }

    static func labeledExtract(salt: SecureBytes, label: String, ikm: SecureBytes, suite: [UInt8]) -> SecureBytes {
        salt.withUnsafeBytes { s in
            ikm.withUnsafeBytes { i in
                var ikmCopy = Array(i)
                defer { secureWipe(&ikmCopy) }
                let parts = [version, suite, Array(label.utf8), ikmCopy]
                // The salt (a shared secret) keys the HMAC straight from its secure buffer: an array copy of it
                // would outlive the call unwiped. An empty salt is HKDF's 32 zero bytes.
                guard s.count > 0 else { return Primitives.hkdfExtract(salt: [], ikm: parts) }
                return Primitives.hmacSHA256(key: s, parts: parts)
            }
        }
    }

    static func labeledExpand(
        prk: SecureBytes,
        label: String,
        info: [UInt8],
        length: Int,
        suite: [UInt8]
    ) throws(E2EEError) -> SecureBytes {
        guard length <= 0xffff else { throw E2EEError.invalidArgument("HPKE LabeledExpand length above 65535") }
        let labeledInfo = i2osp(UInt16(length)) + version + suite + Array(label.utf8) + info
        return try Primitives.hkdfExpand(prk: prk, info: labeledInfo, length: length)
    }

    // MARK: DHKEM(X25519, HKDF-SHA256) (RFC 9180 4.1)

    static func extractAndExpand(dh: [UInt8], kemContext: [UInt8]) throws(E2EEError) -> SecureBytes {
        let prk = labeledExtract(salt: [], label: "eae_prk", ikm: dh, suite: kemSuiteID)
        return try labeledExpand(prk: prk, label: "shared_secret", info: kemContext, length: nh, suite: kemSuiteID)
    }

    /// Encap / AuthEncap. Returns (shared_secret, enc).
    static func encapsulate(
        recipient: X25519PublicKey,
        sender: X25519PrivateKey?,
        ephemeral: X25519PrivateKey
    ) throws(E2EEError) -> (sharedSecret: SecureBytes, enc: [UInt8]) {
        let enc = ephemeral.publicKey.rawRepresentation
        var dh = try Primitives.x25519(secret: ephemeral.secret, publicKey: recipient.rawRepresentation).withUnsafeBytes
        {
            Array($0)
        }
        defer { secureWipe(&dh) }
        var kemContext = enc + recipient.rawRepresentation
        if let sender {
            let dhS = try Primitives.x25519(secret: sender.secret, publicKey: recipient.rawRepresentation)
            dhS.withUnsafeBytes { dh.append(contentsOf: $0) }
            kemContext += sender.publicKey.rawRepresentation
        }
        return (try extractAndExpand(dh: dh, kemContext: kemContext), enc)
    }

    /// Decap / AuthDecap. A low-order `enc` (all-zero DH) is reported as `.openFailed`, like every other failure
    /// to open.
    static func decapsulate(
        enc: [UInt8],
        recipient: X25519PrivateKey,
        senderPublicKey: X25519PublicKey?
    ) throws(E2EEError) -> SecureBytes {
        guard enc.count == suite.encapsulatedKeyLength else { throw E2EEError.openFailed() }
        var dh: [UInt8]
        do {
            dh = try Primitives.x25519(secret: recipient.secret, publicKey: enc).withUnsafeBytes { Array($0) }
            if let senderPublicKey {
                let dhS = try Primitives.x25519(secret: recipient.secret, publicKey: senderPublicKey.rawRepresentation)
                dhS.withUnsafeBytes { dh.append(contentsOf: $0) }
            }
        } catch {
            throw E2EEError.openFailed()
        }
        defer { secureWipe(&dh) }
        var kemContext = enc + recipient.publicKey.rawRepresentation
        if let senderPublicKey { kemContext += senderPublicKey.rawRepresentation }
        return try extractAndExpand(dh: dh, kemContext: kemContext)
    }

    // MARK: key schedule (RFC 9180 5.1)

    /// KeySchedule<ROLE>(mode, shared_secret, info, psk, psk_id) with HKDF-SHA256. `suiteID`, `keyLength` (Nk) and
    /// `nonceLength` (Nn) default to this suite's; another suite on HKDF-SHA256 passes its own
    /// (``hpkeSuiteID(of:)``), so every suite shares this one implementation.
    static func keySchedule(
        mode: Mode,
        sharedSecret: SecureBytes,
        info: [UInt8],
        psk: PreSharedKey?,
        suiteID: [UInt8] = hpkeSuiteID,
        keyLength: Int = nk,
        nonceLength: Int = nn
    ) throws(E2EEError) -> KeySchedule {
        let pskID = psk?.id ?? []
        let pskKey = psk?.key ?? SecureBytes(copying: [])
        // VerifyPSKInputs
        let hasPSK = psk.map { $0.key.count > 0 } ?? false
        let hasPSKID = !pskID.isEmpty
        guard hasPSK == hasPSKID else {
            throw E2EEError.invalidArgument("HPKE: a psk and a psk id must both be given, or neither")
        }
        let needsPSK = mode == .psk || mode == .authPSK
        guard hasPSK == needsPSK else {
            throw E2EEError.invalidArgument(
                needsPSK ? "HPKE: this mode needs a psk" : "HPKE: a psk was given to a non-psk mode"
            )
        }

        let pskIDHash = labeledExtract(salt: [], label: "psk_id_hash", ikm: pskID, suite: suiteID)
        let infoHash = labeledExtract(salt: [], label: "info_hash", ikm: info, suite: suiteID)
        var context = [mode.rawValue]
        pskIDHash.withUnsafeBytes { context += $0 }
        infoHash.withUnsafeBytes { context += $0 }

        let secret = labeledExtract(salt: sharedSecret, label: "secret", ikm: pskKey, suite: suiteID)
        let key = try labeledExpand(prk: secret, label: "key", info: context, length: keyLength, suite: suiteID)
        let baseNonce = try labeledExpand(
            prk: secret,
            label: "base_nonce",
            info: context,
            length: nonceLength,
            suite: suiteID
        )
        let exporter = try labeledExpand(prk: secret, label: "exp", info: context, length: nh, suite: suiteID)
        return KeySchedule(key: key, baseNonce: baseNonce.withUnsafeBytes { Array($0) }, exporterSecret: exporter)
    }

    struct KeySchedule: Sendable {
        let key: SecureBytes
        let baseNonce: [UInt8]
        let exporterSecret: SecureBytes
    }

    static func mode(sender: Bool, psk: PreSharedKey?) -> Mode {
        switch (sender, psk != nil) {
        case (false, false): .base
        case (false, true): .psk
        case (true, false): .auth
        case (true, true): .authPSK
        }
    }
}
