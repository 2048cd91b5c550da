// The X-Wing suite: swift-crypto's X-Wing KEM and AES-256-GCM (on Apple platforms, CryptoKit's, from iOS 26 and
// macOS 26) under the project's RFC 9180 key schedule.
import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension CryptoSuite {
    /// Suite 0x0002: HPKE X-Wing (ML-KEM-768 + X25519, draft-connolly-cfrg-xwing-kem-06) / HKDF-SHA256 /
    /// AES-256-GCM in mode_base (docs/PROTOCOL.md §16). Device keys are 32-byte X-Wing seeds with 1,216-byte public
    /// keys (key id `alg` 0x7A); `enc` is 1,120 bytes.
    public static let xwing = CryptoSuite(
        id: 0x0002,
        name: "xwing",
        kemID: 0x647a,
        kdfID: 0x0001,
        aeadID: 0x0002,
        encapsulatedKeyLength: 1120,
        publicKeyLength: 1216,
        secretKeyLength: 32,
        tagLength: 16,
        keyIDAlgorithm: 0x7A,
        primitive: XWingSuitePrimitive()
    )
}

/// The X-Wing suite's HPKE (the bytes of swift-crypto's `HPKE.Ciphersuite.XWingMLKEM768X25519_SHA256_AES_GCM_256`):
/// swift-crypto's X-Wing KEM and AES-256-GCM, and the RFC 9180 key schedule the classical suite runs (``HPKE``).
///
/// swift-crypto encapsulates only with fresh randomness, so this suite cannot seal deterministically: its byte-exact
/// vectors come from the independent implementation (docs/PROTOCOL.md §13).
struct XWingSuitePrimitive: SuitePrimitive {
    func makeKey(secret: SecureBytes) throws(E2EEError) -> (publicKey: [UInt8], expanded: (any Sendable)?) {
        guard #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *) else {
            throw Self.unavailable()
        }
        do {
            // The seed goes straight from the secure buffer to the library, which expands and keeps the key.
            let key = try secret.withUnsafeBytes {
                try XWingMLKEM768X25519.PrivateKey(seedRepresentation: $0, publicKey: nil)
            }
            return (Array(key.publicKey.rawRepresentation), key)
        } catch {
            throw E2EEError(.invalidKey, "not a valid X-Wing device key seed")
        }
    }

    func generateSecret() -> SecureBytes {
        .random(count: 32)
    }

    func seal(
        to publicKey: [UInt8],
        info: [UInt8],
        ephemeral: SecureBytes?,
        plaintext: (_ encapsulatedKey: [UInt8]) throws(E2EEError) -> (aad: [UInt8], plaintext: [UInt8])
    ) throws(E2EEError) -> (encapsulatedKey: [UInt8], ciphertext: [UInt8]) {
        guard ephemeral == nil else {
            throw E2EEError.invalidArgument(
                "the X-Wing suite encapsulates with fresh randomness only (its vectors come from Tools/independent)"
            )
        }
        guard #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *) else {
            throw Self.unavailable()
        }
        let encapsulation: KEM.EncapsulationResult
        do {
            encapsulation = try XWingMLKEM768X25519.PublicKey(rawRepresentation: publicKey).encapsulate()
        } catch {
            throw E2EEError(.invalidKey, "the X-Wing device key cannot be encapsulated to (not a valid public key)")
        }
        let enc = Array(encapsulation.encapsulated)
        let schedule = try Self.keySchedule(sharedSecret: encapsulation.sharedSecret, info: info)
        var (aad, padded) = try plaintext(enc)
        defer { secureWipe(&padded) }
        do {
            let box = try AES.GCM.seal(
                padded,
                using: Self.aeadKey(schedule),
                nonce: AES.GCM.Nonce(data: schedule.baseNonce),
                authenticating: aad
            )
            // HPKE's ciphertext is the AEAD's ciphertext || tag (the nonce is the schedule's, never sent).
            var ciphertext = Array(box.ciphertext)
            ciphertext.append(contentsOf: box.tag)
            return (enc, ciphertext)
        } catch {
            throw E2EEError(.cryptoFailure, "AES-256-GCM sealing failed")
        }
    }

    func open(
        _ ciphertext: [UInt8],
        encapsulatedKey: [UInt8],
        privateKey: DevicePrivateKey,
        info: [UInt8],
        aad: [UInt8]
    ) throws(E2EEError) -> SecureBytes {
        guard #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *),
            let key = privateKey.expanded as? XWingMLKEM768X25519.PrivateKey,
            encapsulatedKey.count == CryptoSuite.xwing.encapsulatedKeyLength,
            ciphertext.count >= CryptoSuite.xwing.tagLength
        else { throw E2EEError.openFailed() }
        // X-Wing decapsulation never fails on a well-sized `enc` (implicit rejection): a wrong or altered one
        // gives another key, and AES-GCM refuses. Every failure is the one code.
        do {
            let schedule = try Self.keySchedule(
                sharedSecret: try key.decapsulate(Data(encapsulatedKey)),
                info: info
            )
            let tagStart = ciphertext.count - CryptoSuite.xwing.tagLength
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: schedule.baseNonce),
                ciphertext: ciphertext[..<tagStart],
                tag: ciphertext[tagStart...]
            )
            var plaintext = try AES.GCM.open(box, using: Self.aeadKey(schedule), authenticating: aad)
            defer { plaintext.resetBytes(in: plaintext.startIndex..<plaintext.endIndex) }
            return plaintext.withUnsafeBytes { p in
                SecureBytes(count: p.count) { $0.copyMemory(from: p) }
            }
        } catch {
            throw E2EEError.openFailed()
        }
    }

    /// "HPKE" || 0x647a || 0x0001 || 0x0002.
    private static let suiteID = HPKE.hpkeSuiteID(of: .xwing)
    /// AES-256-GCM's Nk and Nn (RFC 9180 7.3).
    private static let keyLength = 32
    private static let nonceLength = 12

    /// KeySchedule in mode_base on the project's HKDF-SHA256 (the classical suite's, with this suite's ids and
    /// AEAD sizes) rather than swift-crypto's HPKE: the library's own schedule allocates enough to cost more than
    /// the whole open may add to its floor (decapsulation + AES-GCM). The KEM's shared secret goes straight from
    /// the library's key (which wipes itself) to a secure buffer.
    private static func keySchedule(sharedSecret: SymmetricKey, info: [UInt8]) throws(E2EEError) -> HPKE.KeySchedule {
        let secret = sharedSecret.withUnsafeBytes { s in
            SecureBytes(count: s.count) { $0.copyMemory(from: s) }
        }
        return try HPKE.keySchedule(
            mode: .base,
            sharedSecret: secret,
            info: info,
            psk: nil,
            suiteID: suiteID,
            keyLength: keyLength,
            nonceLength: nonceLength
        )
    }

    /// The schedule's key as swift-crypto's AES key (a `SymmetricKey` keeps its bytes in a buffer it wipes). The
    /// first message's nonce is `base_nonce` itself (sequence 0, RFC 9180 5.2).
    private static func aeadKey(_ schedule: HPKE.KeySchedule) -> SymmetricKey {
        schedule.key.withUnsafeBytes { SymmetricKey(data: $0) }
    }

    private static func unavailable() -> E2EEError {
        E2EEError(.invalidKey, "the X-Wing suite needs iOS 26 or macOS 26 (CryptoKit's X-Wing) on Apple platforms")
    }
}
