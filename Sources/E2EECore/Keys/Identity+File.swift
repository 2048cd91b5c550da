extension Identity {
    static let magic: [UInt8] = Array("E2EEID".utf8) + [0x00, 0x02]
    static let magicVersion1: [UInt8] = Array("E2EEID".utf8) + [0x00, 0x01]
    static let plainProtection: UInt8 = 0x00
    static let passphraseProtection: UInt8 = 0x01

    /// Argon2id limits for a locked identity file; they are stored in the file, so a reader uses the writer's.
    public struct PassphraseCost: Sendable {
        public var opsLimit: UInt64
        public var memLimit: UInt64
        /// libsodium's "moderate" (3 passes, 256 MiB): for a desktop sender, too much for the filter.
        public static let moderate = PassphraseCost(
            opsLimit: Primitives.pwhashOpsLimitModerate,
            memLimit: Primitives.pwhashMemLimitModerate
        )
        /// The default: Argon2id with 5 passes over 8 MiB (at or above OWASP's minimum, m = 7 MiB, t = 5). A device
        /// unlocks its identity inside the filter, whose whole budget is that of an iOS notification service extension
        /// (24 MB): libsodium's "moderate" (256 MiB) or "interactive" (64 MiB) would exceed it several times over.
        public static let `extension` = PassphraseCost(opsLimit: 5, memLimit: 8 << 20)
        /// For tests only: the smallest limits libsodium accepts.
        public static let minimum = PassphraseCost(
            opsLimit: Primitives.pwhashOpsLimitMin,
            memLimit: Primitives.pwhashMemLimitMin
        )
    }

    /// Writes the identity file (mode 0600, atomic), locked with `passphrase` when one is given.
    public func save(path: String, passphrase: SecureBytes? = nil, cost: PassphraseCost = .extension) throws(E2EEError)
    {
        var body = try self.encodeBody()
        defer { secureWipe(&body) }
        var file = Identity.magic
        defer { secureWipe(&file) }
        if let passphrase {
            let salt = Primitives.randomBytes(Primitives.pwhashSaltLength)
            let nonce = Primitives.randomBytes(Primitives.secretboxNonceLength)
            let key = try Primitives.passphraseKey(
                passphrase: passphrase,
                salt: salt,
                opsLimit: cost.opsLimit,
                memLimit: cost.memLimit
            )
            var w = ByteWriter()
            w.u8(Identity.passphraseProtection)
            w.u64(cost.opsLimit)
            w.u64(cost.memLimit)
            w.raw(salt)
            w.raw(nonce)
            file += w.bytes
            file += try body.withBytes { (b: UnsafeRawBufferPointer) throws(E2EEError) in
                try Primitives.secretboxSeal(key: key, nonce: nonce, plaintext: b)
            }
        } else {
            file.append(Identity.plainProtection)
            file += body
        }
        try SecretFile.write(path: path, bytes: SecureBytes(copying: file))
    }

    /// True when the identity file at `path` is locked with a passphrase (reads only the clear header).
    public static func isLocked(path: String) throws(E2EEError) -> Bool {
        try self.checkIsIdentityFile(path: path)
        let file = try SecretFile.read(path: path)
        return file.withUnsafeBytes {
            $0.count > magic.count && Array($0.prefix(magic.count)) == magic && $0[magic.count] == passphraseProtection
        }
    }

    /// Refuses a file that is plainly not an identity (it does not start with the identity magic's `E2EEID`) with a
    /// message that says what it is, before the private-mode check: a public card (mode 0644) passed as
    /// `--identity` is told it is a card, not to `chmod 600` it. Only the first bytes are read.
    ///
    /// - Throws: `.keyFile` naming what the file looks like.
    static func checkIsIdentityFile(path: String) throws(E2EEError) {
        // Six bytes first: of an identity file, nothing past its label is read here (the rest is secret).
        let label = Array("E2EEID".utf8)
        guard let start = SecretFile.prefix(path: path, count: label.count), !start.isEmpty, start != label,
            let head = SecretFile.prefix(path: path, count: 1024)
        else { return }
        let text = head.drop(while: { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 })
        let what: String
        if text.first == UInt8(ascii: "{") {
            let json = String(decoding: head, as: UTF8.self)
            what =
                json.contains("e2ee-device-request")
                ? "a device request (public JSON)"
                : json.contains("\"devices\"") || json.contains("e2ee-device-list")
                    ? "a public card (a signed device list, JSON)" : "a JSON file"
        } else if text.starts(with: Array("-----BEGIN".utf8)) {
            what = "a PEM file (a key or certificate)"
        } else {
            what = "not an identity file (it does not start with E2EEID)"
        }
        throw E2EEError(
            .keyFile,
            "\(path) is \(what), not an identity: pass the secret <user id>.identity file that `e2ee-send keygen` or "
                + "`e2ee-send device request` wrote (mode 0600)"
        )
    }

    /// Loads an identity file.
    ///
    /// - Parameter passphrase: needed when the file is locked.
    /// - Throws: `.insecureFile` (mode allows group/other access), `.keyFile` (unreadable or not an identity
    ///   file), `.locked` (locked and no passphrase, or a wrong one).
    public static func load(path: String, passphrase: SecureBytes? = nil) throws(E2EEError) -> Identity {
        try self.checkIsIdentityFile(path: path)
        let file = try SecretFile.read(path: path)
        var bytes = file.withUnsafeBytes { Array($0) }
        defer { secureWipe(&bytes) }
        let badFile = { @Sendable (what: String) in E2EEError(.keyFile, "\(path) is not a valid identity file: \(what)")
        }
        var r = ByteReader(bytes, makeError: badFile)
        let fileMagic = try r.take(magic.count, "magic")
        if fileMagic == magicVersion1 {
            throw E2EEError(
                .keyFile,
                "\(path) is a single-device identity of an earlier release (version 1), which has no device id or user key: create a new identity with `e2ee-send keygen`"
            )
        }
        guard fileMagic == magic else { throw badFile("wrong magic or version") }
        switch try r.u8("protection") {
        case plainProtection:
            return try decodeBody(bytes, range: r.offset..<bytes.count, makeError: badFile)
        case passphraseProtection:
            let ops = try r.u64("opslimit")
            let mem = try r.u64("memlimit")
            let salt = try r.take(Primitives.pwhashSaltLength, "salt")
            let nonce = try r.take(Primitives.secretboxNonceLength, "nonce")
            let sealed = try r.take(r.remaining, "sealed body")
            guard let passphrase else {
                throw E2EEError(.locked, "\(path) is locked: unlock it with its passphrase")
            }
            let key = try Primitives.passphraseKey(passphrase: passphrase, salt: salt, opsLimit: ops, memLimit: mem)
            let body = try Primitives.secretboxOpen(key: key, nonce: nonce, ciphertext: sealed)
            var plain = body.withUnsafeBytes { Array($0) }
            defer { secureWipe(&plain) }
            return try decodeBody(plain, range: 0..<plain.count, makeError: badFile)
        default:
            throw badFile("unknown protection byte")
        }
    }

    /// body: user_id str8 | display_name str8 | device_id str8 | device_signing_seed [32] |
    ///       has_user_key u8 | [user_signing_seed [32]] | key_count u8 |
    ///       key_count × (x25519_secret [32] | created_at_ms u64 | retired_at_ms u64 | expires_at_ms u64), 0 = none
    func encodeBody() throws(E2EEError) -> [UInt8] {
        var w = ByteWriter()
        try w.str8(self.userID, field: "user id", allowEmpty: false)
        try w.str8(self.displayName, field: "display name")
        try w.str8(self.deviceID, field: "device id", allowEmpty: false)
        self.signingKey.seed.withUnsafeBytes { w.raw(Array($0)) }
        if let userKey = self.userSigningKey {
            w.u8(1)
            userKey.seed.withUnsafeBytes { w.raw(Array($0)) }
        } else {
            w.u8(0)
        }
        w.u8(UInt8(self.deviceKeys.count))
        for key in self.deviceKeys {
            guard key.privateKey.suite == .classical else {
                throw E2EEError.invalidArgument("identity file version 2 holds classical device keys only")
            }
            key.privateKey.secret.withUnsafeBytes { w.raw(Array($0)) }
            w.u64(key.createdAtMs)
            w.u64(key.retiredAtMs ?? 0)
            w.u64(key.expiresAtMs ?? 0)
        }
        return w.bytes
    }

    static func decodeBody(
        _ bytes: [UInt8],
        range: Range<Int>,
        makeError: @escaping @Sendable (String) -> E2EEError
    ) throws(E2EEError) -> Identity {
        var r = ByteReader(bytes, range: range, makeError: makeError)
        let userID = try r.str8("user id", allowEmpty: false)
        let displayName = try r.str8("display name")
        let deviceID = try r.str8("device id", allowEmpty: false)
        var seed = try r.take(Primitives.ed25519SeedLength, "signing seed")
        defer { secureWipe(&seed) }
        let signingKey = try SigningPrivateKey(seed: SecureBytes(copying: seed))
        var userKey: SigningPrivateKey?
        switch try r.u8("has user key") {
        case 0: userKey = nil
        case 1:
            var userSeed = try r.take(Primitives.ed25519SeedLength, "user signing seed")
            defer { secureWipe(&userSeed) }
            userKey = try SigningPrivateKey(seed: SecureBytes(copying: userSeed))
        default: throw makeError("has_user_key is neither 0 nor 1")
        }
        let count = Int(try r.u8("key count"))
        var keys: [DeviceKey] = []
        for _ in 0..<count {
            var secret = try r.take(Primitives.x25519KeyLength, "device key")
            defer { secureWipe(&secret) }
            let created = try r.u64("created at")
            let retired = try r.u64("retired at")
            let expires = try r.u64("expires at")
            keys.append(
                DeviceKey(
                    privateKey: try DevicePrivateKey(suite: .classical, secret: SecureBytes(copying: secret)),
                    createdAtMs: created,
                    retiredAtMs: retired == 0 ? nil : retired,
                    expiresAtMs: expires == 0 ? nil : expires
                )
            )
        }
        try r.expectEnd("identity")
        do {
            return try Identity(
                userID: userID,
                displayName: displayName,
                deviceID: deviceID,
                signingKey: signingKey,
                userSigningKey: userKey,
                deviceKeys: keys
            )
        } catch {
            throw makeError(error.message)
        }
    }
}
