// C-API BOUNDARY: this file calls libsodium directly. See README.md in this folder.
import CSodium

/// Thin, size-checked Swift wrappers over the libsodium primitives E2EECore is built from.
///
/// Inputs are checked for size before any C call; every return code goes through `Sodium.check`.
/// Secret outputs are returned as ``SecureBytes``.
enum Primitives {}

// MARK: - Random

extension Primitives {
    /// `count` bytes from libsodium's CSPRNG (`randombytes_buf`).
    static func randomBytes(_ count: Int) -> [UInt8] {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { if let base = $0.baseAddress { randombytes_buf(base, $0.count) } }
        return out
    }
}

// MARK: - SHA-256

extension Primitives {
    /// SHA-256 (`crypto_hash_sha256`).
    static func sha256(_ message: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        let rc = out.withUnsafeMutableBufferPointer { o in
            message.withUnsafeBufferPointer { m in
                crypto_hash_sha256(o.baseAddress!, m.baseAddress, UInt64(m.count))
            }
        }
        // crypto_hash_sha256 has no failure mode; the check keeps the rule "no ignored return code".
        precondition(rc == 0, "crypto_hash_sha256 failed")
        return out
    }
}

// MARK: - HMAC-SHA256 and HKDF-SHA256 (RFC 5869; libsodium 1.0.18 has no HKDF API)

extension Primitives {
    static let hmacSHA256Length = Int(crypto_auth_hmacsha256_BYTES)

    /// HMAC-SHA256 with a key of any length (`crypto_auth_hmacsha256_init/update/final`).
    static func hmacSHA256(key: UnsafeRawBufferPointer, message: [UInt8]) -> SecureBytes {
        hmacSHA256(key: key, parts: [message])
    }

    /// HMAC-SHA256 over the concatenation of `parts`, without building the concatenation.
    static func hmacSHA256(key: UnsafeRawBufferPointer, parts: [[UInt8]]) -> SecureBytes {
        Sodium.ensureInitialized()
        return SecureBytes(count: hmacSHA256Length) { out in
            var state = crypto_auth_hmacsha256_state()
            defer { withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress, $0.count) } }
            var emptyKey: UInt8 = 0
            var rc = crypto_auth_hmacsha256_init(
                &state,
                key.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? withUnsafePointer(to: &emptyKey) { $0 },
                key.count
            )
            for part in parts where rc == 0 {
                rc = part.withUnsafeBufferPointer {
                    crypto_auth_hmacsha256_update(&state, $0.baseAddress, UInt64($0.count))
                }
            }
            if rc == 0 {
                rc = crypto_auth_hmacsha256_final(&state, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            // init/update/final only fail on programming errors (they return 0 in 1.0.18).
            precondition(rc == 0, "crypto_auth_hmacsha256 failed")
        }
    }

    /// HKDF-Extract(salt, ikm) = HMAC-SHA256(key: salt, ikm); an empty salt means 32 zero bytes (RFC 5869 2.2).
    static func hkdfExtract(salt: [UInt8], ikm: [[UInt8]]) -> SecureBytes {
        let effectiveSalt = salt.isEmpty ? [UInt8](repeating: 0, count: hmacSHA256Length) : salt
        return effectiveSalt.withUnsafeBytes { hmacSHA256(key: $0, parts: ikm) }
    }

    /// HKDF-Expand(prk, info, length) (RFC 5869 2.3). `length` must be at most 255 * 32.
    static func hkdfExpand(prk: SecureBytes, info: [UInt8], length: Int) throws(E2EEError) -> SecureBytes {
        guard length >= 0, length <= 255 * hmacSHA256Length else {
            throw E2EEError.invalidArgument("HKDF-Expand length \(length) is above 255 * 32")
        }
        return prk.withUnsafeBytes { prkBytes in
            SecureBytes(count: length) { out in
                var previous = [UInt8]()
                defer { secureWipe(&previous) }
                var offset = 0
                var counter: UInt8 = 1
                while offset < length {
                    let block = hmacSHA256(key: prkBytes, parts: [previous, info, [counter]])
                    block.withUnsafeBytes { b in
                        let take = min(b.count, length - offset)
                        out.baseAddress!.advanced(by: offset).copyMemory(from: b.baseAddress!, byteCount: take)
                        offset += take
                        secureWipe(&previous)
                        previous = Array(b)
                    }
                    counter &+= 1
                }
            }
        }
    }
}

// MARK: - X25519

extension Primitives {
    static let x25519KeyLength = Int(crypto_scalarmult_curve25519_BYTES)

    /// The X25519 public key of a 32-byte secret scalar (`crypto_scalarmult_curve25519_base`).
    static func x25519PublicKey(secret: SecureBytes) throws(E2EEError) -> [UInt8] {
        Sodium.ensureInitialized()
        guard secret.count == x25519KeyLength else {
            throw E2EEError(.invalidKey, "an X25519 secret key is \(x25519KeyLength) bytes, got \(secret.count)")
        }
        var out = [UInt8](repeating: 0, count: x25519KeyLength)
        let rc = secret.withUnsafeBytes { s in
            out.withUnsafeMutableBufferPointer { o in
                crypto_scalarmult_curve25519_base(o.baseAddress!, s.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        try Sodium.check(rc, E2EEError(.invalidKey, "the X25519 secret key gives no valid public key"))
        return out
    }

    /// X25519(secret, public). Throws `.invalidKey` when the shared secret is all zero (a low-order public key),
    /// which RFC 9180 7.1.4 requires a recipient and a sender to reject.
    static func x25519(secret: SecureBytes, publicKey: [UInt8]) throws(E2EEError) -> SecureBytes {
        Sodium.ensureInitialized()
        guard secret.count == x25519KeyLength, publicKey.count == x25519KeyLength else {
            throw E2EEError(.invalidKey, "X25519 keys are \(x25519KeyLength) bytes")
        }
        return try SecureBytes(count: x25519KeyLength) { (out: UnsafeMutableRawBufferPointer) throws(E2EEError) in
            let o = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let rc = secret.withUnsafeBytes { s in
                publicKey.withUnsafeBufferPointer { p in
                    crypto_scalarmult_curve25519(o, s.baseAddress!.assumingMemoryBound(to: UInt8.self), p.baseAddress!)
                }
            }
            // libsodium itself returns -1 for an all-zero result; check explicitly as RFC 9180 requires.
            try Sodium.check(rc, E2EEError(.invalidKey, "X25519 gave an all-zero shared secret (low-order point)"))
            guard sodium_is_zero(o, x25519KeyLength) == 0 else {
                throw E2EEError(.invalidKey, "X25519 gave an all-zero shared secret (low-order point)")
            }
        }
    }
}

// MARK: - ChaCha20-Poly1305 (IETF, 96-bit nonce)

extension Primitives {
    static let chachaKeyLength = Int(crypto_aead_chacha20poly1305_ietf_KEYBYTES)
    static let chachaNonceLength = Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES)
    static let chachaTagLength = Int(crypto_aead_chacha20poly1305_ietf_ABYTES)

    /// Seals `plaintext`: returns ciphertext || 16-byte tag.
    static func chachaSeal(
        key: SecureBytes,
        nonce: [UInt8],
        aad: [UInt8],
        plaintext: UnsafeRawBufferPointer
    ) throws(E2EEError) -> [UInt8] {
        Sodium.ensureInitialized()
        guard key.count == chachaKeyLength, nonce.count == chachaNonceLength else {
            throw E2EEError.invalidArgument("ChaCha20-Poly1305 needs a 32-byte key and a 12-byte nonce")
        }
        var out = [UInt8](repeating: 0, count: plaintext.count + chachaTagLength)
        var outLength: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            nonce.withUnsafeBufferPointer { n in
                aad.withUnsafeBufferPointer { a in
                    out.withUnsafeMutableBufferPointer { o in
                        crypto_aead_chacha20poly1305_ietf_encrypt(
                            o.baseAddress!,
                            &outLength,
                            plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self),
                            UInt64(plaintext.count),
                            a.baseAddress,
                            UInt64(a.count),
                            nil,
                            n.baseAddress!,
                            k.baseAddress!.assumingMemoryBound(to: UInt8.self)
                        )
                    }
                }
            }
        }
        try Sodium.check(rc, operation: "crypto_aead_chacha20poly1305_ietf_encrypt")
        return out
    }

    /// Opens ciphertext || tag. Every failure is `.openFailed` (no oracle). The plaintext is secret.
    static func chachaOpen(
        key: SecureBytes,
        nonce: [UInt8],
        aad: [UInt8],
        ciphertext: [UInt8]
    ) throws(E2EEError) -> SecureBytes {
        Sodium.ensureInitialized()
        guard key.count == chachaKeyLength, nonce.count == chachaNonceLength, ciphertext.count >= chachaTagLength
        else { throw E2EEError.openFailed() }
        return try SecureBytes(count: ciphertext.count - chachaTagLength) {
            (out: UnsafeMutableRawBufferPointer) throws(E2EEError) in
            var outLength: UInt64 = 0
            let rc = key.withUnsafeBytes { k in
                nonce.withUnsafeBufferPointer { n in
                    aad.withUnsafeBufferPointer { a in
                        ciphertext.withUnsafeBufferPointer { c in
                            crypto_aead_chacha20poly1305_ietf_decrypt(
                                out.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                &outLength,
                                nil,
                                c.baseAddress!,
                                UInt64(c.count),
                                a.baseAddress,
                                UInt64(a.count),
                                n.baseAddress!,
                                k.baseAddress!.assumingMemoryBound(to: UInt8.self)
                            )
                        }
                    }
                }
            }
            try Sodium.check(rc, E2EEError.openFailed())
        }
    }
}

// MARK: - Ed25519

extension Primitives {
    static let ed25519SeedLength = Int(crypto_sign_SEEDBYTES)
    static let ed25519PublicKeyLength = Int(crypto_sign_PUBLICKEYBYTES)
    static let ed25519SignatureLength = Int(crypto_sign_BYTES)

    /// The Ed25519 key pair of a 32-byte seed: (public key, 64-byte libsodium secret key).
    static func ed25519KeyPair(seed: SecureBytes) throws(E2EEError) -> (publicKey: [UInt8], secretKey: SecureBytes) {
        Sodium.ensureInitialized()
        guard seed.count == ed25519SeedLength else {
            throw E2EEError(.invalidKey, "an Ed25519 seed is \(ed25519SeedLength) bytes, got \(seed.count)")
        }
        var publicKey = [UInt8](repeating: 0, count: ed25519PublicKeyLength)
        let secretKey = try SecureBytes(count: Int(crypto_sign_SECRETKEYBYTES)) {
            (sk: UnsafeMutableRawBufferPointer) throws(E2EEError) in
            let rc = seed.withUnsafeBytes { s in
                publicKey.withUnsafeMutableBufferPointer { p in
                    crypto_sign_seed_keypair(
                        p.baseAddress!,
                        sk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        s.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    )
                }
            }
            try Sodium.check(rc, operation: "crypto_sign_seed_keypair")
        }
        return (publicKey, secretKey)
    }

    /// A detached Ed25519 signature over `message` with a 64-byte libsodium secret key.
    static func ed25519Sign(secretKey: SecureBytes, message: [UInt8]) throws(E2EEError) -> [UInt8] {
        Sodium.ensureInitialized()
        var signature = [UInt8](repeating: 0, count: ed25519SignatureLength)
        let rc = secretKey.withUnsafeBytes { sk in
            message.withUnsafeBufferPointer { m in
                signature.withUnsafeMutableBufferPointer { s in
                    crypto_sign_detached(
                        s.baseAddress!,
                        nil,
                        m.baseAddress,
                        UInt64(m.count),
                        sk.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    )
                }
            }
        }
        try Sodium.check(rc, operation: "crypto_sign_detached")
        return signature
    }

    /// Verifies a detached Ed25519 signature (`crypto_sign_verify_detached`, which rejects non-canonical and
    /// small-order encodings). Returns false for any failure, including wrong sizes.
    static func ed25519Verify(publicKey: [UInt8], message: [UInt8], signature: [UInt8]) -> Bool {
        Sodium.ensureInitialized()
        guard publicKey.count == ed25519PublicKeyLength, signature.count == ed25519SignatureLength else {
            return false
        }
        let rc = publicKey.withUnsafeBufferPointer { p in
            message.withUnsafeBufferPointer { m in
                signature.withUnsafeBufferPointer { s in
                    crypto_sign_verify_detached(s.baseAddress!, m.baseAddress, UInt64(m.count), p.baseAddress!)
                }
            }
        }
        return (try? Sodium.check(rc, operation: "crypto_sign_verify_detached")) != nil
    }
}

// MARK: - Padding (ISO/IEC 7816-4, sodium_pad / sodium_unpad)

extension Primitives {
    /// Pads `message` to the next multiple of `blockSize` (always adding at least one byte).
    static func pad(_ message: [UInt8], blockSize: Int) throws(E2EEError) -> [UInt8] {
        Sodium.ensureInitialized()
        guard blockSize > 0 else { throw E2EEError.invalidArgument("padding block size must be positive") }
        let maxLength = (message.count / blockSize + 1) * blockSize
        var buffer = message + [UInt8](repeating: 0, count: maxLength - message.count)
        var paddedLength = 0
        let rc = buffer.withUnsafeMutableBufferPointer { b in
            sodium_pad(&paddedLength, b.baseAddress!, message.count, blockSize, maxLength)
        }
        try Sodium.check(rc, operation: "sodium_pad")
        buffer.removeSubrange(paddedLength...)
        return buffer
    }

    /// The unpadded length of `padded`, or nil when the padding is invalid.
    static func unpaddedLength(_ padded: UnsafeRawBufferPointer, blockSize: Int) -> Int? {
        Sodium.ensureInitialized()
        guard blockSize > 0, padded.count > 0 else { return nil }
        var length = 0
        let rc = sodium_unpad(&length, padded.baseAddress!.assumingMemoryBound(to: UInt8.self), padded.count, blockSize)
        return (try? Sodium.check(rc, operation: "sodium_unpad")) != nil ? length : nil
    }
}

// MARK: - Passphrase protection (Argon2id + XSalsa20-Poly1305 secretbox)

extension Primitives {
    static let pwhashSaltLength = Int(crypto_pwhash_SALTBYTES)
    static let secretboxNonceLength = Int(crypto_secretbox_NONCEBYTES)
    static let secretboxKeyLength = Int(crypto_secretbox_KEYBYTES)
    static let secretboxMACLength = Int(crypto_secretbox_MACBYTES)
    static let pwhashOpsLimitModerate = UInt64(crypto_pwhash_OPSLIMIT_MODERATE)
    static let pwhashMemLimitModerate = UInt64(crypto_pwhash_MEMLIMIT_MODERATE)
    static let pwhashOpsLimitMin = UInt64(crypto_pwhash_OPSLIMIT_MIN)
    static let pwhashMemLimitMin = UInt64(crypto_pwhash_MEMLIMIT_MIN)

    /// Derives a secretbox key from a passphrase with Argon2id (`crypto_pwhash`, ALG_ARGON2ID13).
    static func passphraseKey(
        passphrase: SecureBytes,
        salt: [UInt8],
        opsLimit: UInt64,
        memLimit: UInt64
    ) throws(E2EEError) -> SecureBytes {
        Sodium.ensureInitialized()
        guard salt.count == pwhashSaltLength else { throw E2EEError.invalidArgument("pwhash salt must be 16 bytes") }
        guard opsLimit >= pwhashOpsLimitMin, memLimit >= pwhashMemLimitMin, memLimit <= 1 << 31 else {
            throw E2EEError(.keyFile, "the identity file asks for Argon2id limits outside the accepted range")
        }
        return try SecureBytes(count: secretboxKeyLength) { (out: UnsafeMutableRawBufferPointer) throws(E2EEError) in
            let rc = passphrase.withUnsafeBytes { p in
                salt.withUnsafeBufferPointer { s in
                    crypto_pwhash(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        UInt64(out.count),
                        p.baseAddress!.assumingMemoryBound(to: CChar.self),
                        UInt64(p.count),
                        s.baseAddress!,
                        opsLimit,
                        Int(memLimit),
                        crypto_pwhash_ALG_ARGON2ID13
                    )
                }
            }
            try Sodium.check(rc, E2EEError(.cryptoFailure, "Argon2id could not run (out of memory?)"))
        }
    }

    /// secretbox (XSalsa20-Poly1305) seal: returns MAC || ciphertext.
    static func secretboxSeal(
        key: SecureBytes,
        nonce: [UInt8],
        plaintext: UnsafeRawBufferPointer
    ) throws(E2EEError)
        -> [UInt8]
    {
        Sodium.ensureInitialized()
        guard key.count == secretboxKeyLength, nonce.count == secretboxNonceLength else {
            throw E2EEError.invalidArgument("secretbox needs a 32-byte key and a 24-byte nonce")
        }
        var out = [UInt8](repeating: 0, count: plaintext.count + secretboxMACLength)
        let rc = key.withUnsafeBytes { k in
            nonce.withUnsafeBufferPointer { n in
                out.withUnsafeMutableBufferPointer { o in
                    crypto_secretbox_easy(
                        o.baseAddress!,
                        plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        UInt64(plaintext.count),
                        n.baseAddress!,
                        k.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    )
                }
            }
        }
        try Sodium.check(rc, operation: "crypto_secretbox_easy")
        return out
    }

    /// secretbox open; a wrong key or altered bytes give `.locked` (wrong passphrase or damaged file).
    static func secretboxOpen(key: SecureBytes, nonce: [UInt8], ciphertext: [UInt8]) throws(E2EEError) -> SecureBytes {
        Sodium.ensureInitialized()
        guard key.count == secretboxKeyLength, nonce.count == secretboxNonceLength,
            ciphertext.count >= secretboxMACLength
        else { throw E2EEError(.locked, "the locked identity file is damaged") }
        return try SecureBytes(count: ciphertext.count - secretboxMACLength) {
            (out: UnsafeMutableRawBufferPointer) throws(E2EEError) in
            let rc = key.withUnsafeBytes { k in
                nonce.withUnsafeBufferPointer { n in
                    ciphertext.withUnsafeBufferPointer { c in
                        crypto_secretbox_open_easy(
                            out.baseAddress?.assumingMemoryBound(to: UInt8.self)
                                ?? UnsafeMutablePointer(mutating: c.baseAddress!),
                            c.baseAddress!,
                            UInt64(c.count),
                            n.baseAddress!,
                            k.baseAddress!.assumingMemoryBound(to: UInt8.self)
                        )
                    }
                }
            }
            try Sodium.check(
                rc,
                E2EEError(.locked, "wrong passphrase for the identity file (or the file was altered)")
            )
        }
    }
}
