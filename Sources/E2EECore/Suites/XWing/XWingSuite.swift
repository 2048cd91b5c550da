// The X-Wing suite on swift-crypto's HPKE (on Apple platforms, CryptoKit's, from iOS 26 and macOS 26).
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

/// The X-Wing suite's HPKE: swift-crypto's `HPKE.Ciphersuite.XWingMLKEM768X25519_SHA256_AES_GCM_256`.
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
        var sender: Crypto.HPKE.Sender
        do {
            let recipient = try XWingMLKEM768X25519.PublicKey(rawRepresentation: publicKey)
            sender = try Crypto.HPKE.Sender(
                recipientKey: recipient,
                ciphersuite: .XWingMLKEM768X25519_SHA256_AES_GCM_256,
                info: Data(info)
            )
        } catch {
            throw E2EEError(.invalidKey, "the X-Wing device key cannot be encapsulated to (not a valid public key)")
        }
        let enc = Array(sender.encapsulatedKey)
        var (aad, padded) = try plaintext(enc)
        defer { secureWipe(&padded) }
        do {
            return (enc, Array(try sender.seal(padded, authenticating: aad)))
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
            encapsulatedKey.count == CryptoSuite.xwing.encapsulatedKeyLength
        else { throw E2EEError.openFailed() }
        do {
            var recipient = try Crypto.HPKE.Recipient(
                privateKey: key,
                ciphersuite: .XWingMLKEM768X25519_SHA256_AES_GCM_256,
                info: Data(info),
                encapsulatedKey: Data(encapsulatedKey)
            )
            var plaintext = try recipient.open(ciphertext, authenticating: aad)
            defer { plaintext.resetBytes(in: plaintext.startIndex..<plaintext.endIndex) }
            return SecureBytes(copying: plaintext)
        } catch {
            // X-Wing decapsulation never fails on a well-sized `enc` (implicit rejection): a wrong or altered one
            // gives another key, and AES-GCM refuses. Every failure is the one code.
            throw E2EEError.openFailed()
        }
    }

    private static func unavailable() -> E2EEError {
        E2EEError(.invalidKey, "the X-Wing suite needs iOS 26 or macOS 26 (CryptoKit's X-Wing) on Apple platforms")
    }
}
