// C-API: this file calls libsodium directly, on purpose: it is the benchmark's floor (the cost of the primitives
// alone, with preallocated buffers and no Swift-side allocation or copying).
import CSodiumBench

/// The libsodium floor of the HPKE suite DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20-Poly1305: the same
/// RFC 9180 computations E2EECore's HPKE makes, done with raw libsodium calls into buffers allocated once.
///
/// The key schedule makes the same HMAC-SHA256 calls as E2EECore's (`HPKE.swift`), with the same input sizes:
/// DHKEM ExtractAndExpand = 2 (eae_prk, shared_secret), KeySchedule = 6 (psk_id_hash, info_hash, secret, key,
/// base_nonce, exp). So one setup costs 1 X25519 (open) or 1 X25519 + 1 X25519 base (seal) and 8 HMACs.
final class RawHPKE {
    static let hmacCallsPerSetup = 8

    private let version = Array("HPKE-v1".utf8)
    private let kemSuite: [UInt8] = Array("KEM".utf8) + [0x00, 0x20]
    private let hpkeSuite: [UInt8] = Array("HPKE".utf8) + [0x00, 0x20, 0x00, 0x01, 0x00, 0x03]
    private let zeroSalt = [UInt8](repeating: 0, count: 32)
    private let labels: [String: [UInt8]] = [
        "eae_prk": Array("eae_prk".utf8), "shared_secret": Array("shared_secret".utf8),
        "psk_id_hash": Array("psk_id_hash".utf8), "info_hash": Array("info_hash".utf8),
        "secret": Array("secret".utf8), "key": Array("key".utf8), "base_nonce": Array("base_nonce".utf8),
        "exp": Array("exp".utf8),
    ]
    private let lEae: [UInt8]
    private let lShared: [UInt8]
    private let lPskID: [UInt8]
    private let lInfo: [UInt8]
    private let lSecret: [UInt8]
    private let lKey: [UInt8]
    private let lNonce: [UInt8]
    private let lExp: [UInt8]

    // Scratch buffers, allocated once.
    var dh = [UInt8](repeating: 0, count: 32)
    var kemContext = [UInt8](repeating: 0, count: 64)
    var prk = [UInt8](repeating: 0, count: 32)
    var sharedSecret = [UInt8](repeating: 0, count: 32)
    var context = [UInt8](repeating: 0, count: 65)
    var secret = [UInt8](repeating: 0, count: 32)
    var key = [UInt8](repeating: 0, count: 32)
    var block = [UInt8](repeating: 0, count: 32)
    var baseNonce = [UInt8](repeating: 0, count: 12)
    var exporter = [UInt8](repeating: 0, count: 32)
    var ephemeralSecret = [UInt8](repeating: 0, count: 32)
    var ephemeralPublic = [UInt8](repeating: 0, count: 32)

    init() {
        precondition(sodium_init() >= 0)
        self.lEae = self.labels["eae_prk"]!
        self.lShared = self.labels["shared_secret"]!
        self.lPskID = self.labels["psk_id_hash"]!
        self.lInfo = self.labels["info_hash"]!
        self.lSecret = self.labels["secret"]!
        self.lKey = self.labels["key"]!
        self.lNonce = self.labels["base_nonce"]!
        self.lExp = self.labels["exp"]!
    }

    // MARK: HMAC building blocks

    /// HMAC(key, version || suite || label || ikm): LabeledExtract.
    @inline(__always)
    private func labeledExtract(
        salt: UnsafeBufferPointer<UInt8>,
        suite: [UInt8],
        label: [UInt8],
        ikm: UnsafeBufferPointer<UInt8>,
        out: UnsafeMutablePointer<UInt8>
    ) {
        var state = crypto_auth_hmacsha256_state()
        var rc = crypto_auth_hmacsha256_init(&state, salt.baseAddress!, salt.count)
        rc |= self.version.withUnsafeBufferPointer { crypto_auth_hmacsha256_update(&state, $0.baseAddress, 7) }
        rc |= suite.withUnsafeBufferPointer { crypto_auth_hmacsha256_update(&state, $0.baseAddress, UInt64($0.count)) }
        rc |= label.withUnsafeBufferPointer { crypto_auth_hmacsha256_update(&state, $0.baseAddress, UInt64($0.count)) }
        rc |= crypto_auth_hmacsha256_update(&state, ikm.baseAddress, UInt64(ikm.count))
        rc |= crypto_auth_hmacsha256_final(&state, out)
        precondition(rc == 0)
    }

    /// HMAC(prk, I2OSP(L, 2) || version || suite || label || info || 0x01), truncated to L <= 32: LabeledExpand.
    @inline(__always)
    private func labeledExpand(
        prk: UnsafeBufferPointer<UInt8>,
        suite: [UInt8],
        label: [UInt8],
        info: UnsafeBufferPointer<UInt8>,
        length: Int,
        out: UnsafeMutablePointer<UInt8>
    ) {
        var state = crypto_auth_hmacsha256_state()
        var lengthAndCounter: (UInt8, UInt8, UInt8) = (0, UInt8(length), 1)
        var rc = crypto_auth_hmacsha256_init(&state, prk.baseAddress!, prk.count)
        rc |= withUnsafeBytes(of: &lengthAndCounter) {
            crypto_auth_hmacsha256_update(&state, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), 2)
        }
        rc |= self.version.withUnsafeBufferPointer { crypto_auth_hmacsha256_update(&state, $0.baseAddress, 7) }
        rc |= suite.withUnsafeBufferPointer { crypto_auth_hmacsha256_update(&state, $0.baseAddress, UInt64($0.count)) }
        rc |= label.withUnsafeBufferPointer { crypto_auth_hmacsha256_update(&state, $0.baseAddress, UInt64($0.count)) }
        rc |= crypto_auth_hmacsha256_update(&state, info.baseAddress, UInt64(info.count))
        rc |= withUnsafeBytes(of: &lengthAndCounter) {
            crypto_auth_hmacsha256_update(&state, $0.baseAddress!.assumingMemoryBound(to: UInt8.self) + 2, 1)
        }
        self.block.withUnsafeMutableBufferPointer { rc |= crypto_auth_hmacsha256_final(&state, $0.baseAddress!) }
        self.block.withUnsafeBufferPointer { out.update(from: $0.baseAddress!, count: length) }
        precondition(rc == 0)
    }

    // MARK: the 8 HMACs

    /// DHKEM ExtractAndExpand + KeySchedule (base mode): `dh` and `kemContext` must be filled; fills `key`,
    /// `baseNonce`, `exporter`.
    func keySchedule(info: [UInt8]) {
        let empty = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        self.zeroSalt.withUnsafeBufferPointer { zero in
            self.dh.withUnsafeBufferPointer { dh in
                self.prk.withUnsafeMutableBufferPointer { prk in
                    labeledExtract(salt: zero, suite: kemSuite, label: lEae, ikm: dh, out: prk.baseAddress!)
                }
            }
            self.prk.withUnsafeBufferPointer { prk in
                self.kemContext.withUnsafeBufferPointer { kc in
                    self.sharedSecret.withUnsafeMutableBufferPointer { ss in
                        labeledExpand(
                            prk: prk,
                            suite: kemSuite,
                            label: lShared,
                            info: kc,
                            length: 32,
                            out: ss.baseAddress!
                        )
                    }
                }
            }
            self.context.withUnsafeMutableBufferPointer { ctx in
                ctx[0] = 0x00  // mode_base
                labeledExtract(salt: zero, suite: hpkeSuite, label: lPskID, ikm: empty, out: ctx.baseAddress! + 1)
                info.withUnsafeBufferPointer { i in
                    labeledExtract(salt: zero, suite: hpkeSuite, label: lInfo, ikm: i, out: ctx.baseAddress! + 33)
                }
            }
        }
        self.sharedSecret.withUnsafeBufferPointer { ss in
            self.secret.withUnsafeMutableBufferPointer { s in
                labeledExtract(salt: ss, suite: hpkeSuite, label: lSecret, ikm: empty, out: s.baseAddress!)
            }
        }
        self.secret.withUnsafeBufferPointer { s in
            self.context.withUnsafeBufferPointer { ctx in
                self.key.withUnsafeMutableBufferPointer {
                    labeledExpand(prk: s, suite: hpkeSuite, label: lKey, info: ctx, length: 32, out: $0.baseAddress!)
                }
                self.baseNonce.withUnsafeMutableBufferPointer {
                    labeledExpand(prk: s, suite: hpkeSuite, label: lNonce, info: ctx, length: 12, out: $0.baseAddress!)
                }
                self.exporter.withUnsafeMutableBufferPointer {
                    labeledExpand(prk: s, suite: hpkeSuite, label: lExp, info: ctx, length: 32, out: $0.baseAddress!)
                }
            }
        }
    }

    // MARK: seal and open

    /// SetupBaseR + Open (sequence 0) into `plaintext` (count = ciphertext.count - 16). Returns false on failure.
    func open(
        ciphertext: [UInt8],
        enc: [UInt8],
        recipientSecret: [UInt8],
        recipientPublic: [UInt8],
        info: [UInt8],
        aad: [UInt8],
        plaintext: inout [UInt8]
    ) -> Bool {
        var rc = self.dh.withUnsafeMutableBufferPointer { dh in
            crypto_scalarmult_curve25519(dh.baseAddress!, recipientSecret, enc)
        }
        self.kemContext.withUnsafeMutableBufferPointer { kc in
            kc.baseAddress!.update(from: enc, count: 32)
            (kc.baseAddress! + 32).update(from: recipientPublic, count: 32)
        }
        self.keySchedule(info: info)
        rc |= plaintext.withUnsafeMutableBufferPointer { p in
            crypto_aead_chacha20poly1305_ietf_decrypt(
                p.baseAddress,
                nil,
                nil,
                ciphertext,
                UInt64(ciphertext.count),
                aad,
                UInt64(aad.count),
                self.baseNonce,
                self.key
            )
        }
        return rc == 0
    }

    /// SetupBaseS (fresh ephemeral) + Seal (sequence 0) into `ciphertext` (count = plaintext.count + 16) and
    /// `ephemeralPublic`.
    func seal(plaintext: [UInt8], recipientPublic: [UInt8], info: [UInt8], aad: [UInt8], ciphertext: inout [UInt8]) {
        var rc: Int32 = 0
        self.ephemeralSecret.withUnsafeMutableBufferPointer { randombytes_buf($0.baseAddress!, 32) }
        self.ephemeralPublic.withUnsafeMutableBufferPointer {
            rc |= crypto_scalarmult_curve25519_base($0.baseAddress!, self.ephemeralSecret)
        }
        self.dh.withUnsafeMutableBufferPointer {
            rc |= crypto_scalarmult_curve25519($0.baseAddress!, self.ephemeralSecret, recipientPublic)
        }
        self.kemContext.withUnsafeMutableBufferPointer { kc in
            kc.baseAddress!.update(from: self.ephemeralPublic, count: 32)
            (kc.baseAddress! + 32).update(from: recipientPublic, count: 32)
        }
        self.keySchedule(info: info)
        ciphertext.withUnsafeMutableBufferPointer { c in
            rc |= crypto_aead_chacha20poly1305_ietf_encrypt(
                c.baseAddress!,
                nil,
                plaintext,
                UInt64(plaintext.count),
                aad,
                UInt64(aad.count),
                nil,
                self.baseNonce,
                self.key
            )
        }
        precondition(rc == 0)
    }
}

/// Raw single primitives, for the per-primitive lines of the table.
enum RawPrimitives {
    static func x25519(_ out: inout [UInt8], secret: [UInt8], publicKey: [UInt8]) -> Int32 {
        out.withUnsafeMutableBufferPointer { crypto_scalarmult_curve25519($0.baseAddress!, secret, publicKey) }
    }

    static func hmac(_ out: inout [UInt8], key: [UInt8], message: [UInt8]) -> Int32 {
        var state = crypto_auth_hmacsha256_state()
        var rc = crypto_auth_hmacsha256_init(&state, key, key.count)
        rc |= crypto_auth_hmacsha256_update(&state, message, UInt64(message.count))
        rc |= out.withUnsafeMutableBufferPointer { crypto_auth_hmacsha256_final(&state, $0.baseAddress!) }
        return rc
    }

    static func chachaSeal(_ out: inout [UInt8], key: [UInt8], nonce: [UInt8], plaintext: [UInt8]) -> Int32 {
        out.withUnsafeMutableBufferPointer {
            crypto_aead_chacha20poly1305_ietf_encrypt(
                $0.baseAddress!,
                nil,
                plaintext,
                UInt64(plaintext.count),
                nil,
                0,
                nil,
                nonce,
                key
            )
        }
    }

    static func chachaOpen(_ out: inout [UInt8], key: [UInt8], nonce: [UInt8], ciphertext: [UInt8]) -> Int32 {
        out.withUnsafeMutableBufferPointer {
            crypto_aead_chacha20poly1305_ietf_decrypt(
                $0.baseAddress,
                nil,
                nil,
                ciphertext,
                UInt64(ciphertext.count),
                nil,
                0,
                nonce,
                key
            )
        }
    }

    static func ed25519KeyPair() -> (publicKey: [UInt8], secretKey: [UInt8]) {
        var pk = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        var sk = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
        precondition(crypto_sign_keypair(&pk, &sk) == 0)
        return (pk, sk)
    }

    static func ed25519Sign(_ signature: inout [UInt8], secretKey: [UInt8], message: [UInt8]) -> Int32 {
        signature.withUnsafeMutableBufferPointer {
            crypto_sign_detached($0.baseAddress!, nil, message, UInt64(message.count), secretKey)
        }
    }

    static func ed25519Verify(signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Int32 {
        crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey)
    }

    static func unpad(_ padded: [UInt8], blockSize: Int) -> Int {
        var length = 0
        let rc = sodium_unpad(&length, padded, padded.count, blockSize)
        return rc == 0 ? length : -1
    }

    static func pad(_ buffer: inout [UInt8], unpaddedLength: Int, blockSize: Int) -> Int32 {
        var padded = 0
        let capacity = buffer.count
        return buffer.withUnsafeMutableBufferPointer {
            sodium_pad(&padded, $0.baseAddress!, unpaddedLength, blockSize, capacity)
        }
    }

    static func random(_ buffer: inout [UInt8]) {
        buffer.withUnsafeMutableBufferPointer { randombytes_buf($0.baseAddress!, $0.count) }
    }

    static func x25519Base(_ out: inout [UInt8], secret: [UInt8]) -> Int32 {
        out.withUnsafeMutableBufferPointer { crypto_scalarmult_curve25519_base($0.baseAddress!, secret) }
    }
}
