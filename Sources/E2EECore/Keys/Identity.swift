/// One device key of an identity: an X25519 key with its key id and lifetime.
public struct DeviceKey: Sendable, CustomStringConvertible {
    public let privateKey: X25519PrivateKey
    public var keyID: KeyID { self.privateKey.publicKey.keyID }
    /// When the key was created (ms since the epoch).
    public let createdAtMs: UInt64
    /// When a newer key replaced it, or nil for the current key.
    public var retiredAtMs: UInt64?

    public var description: String {
        "DeviceKey(\(self.keyID), created \(self.createdAtMs), retired \(self.retiredAtMs.map(String.init) ?? "-"))"
    }
}

/// A user's identity on one device: the Ed25519 signing key and one or more X25519 device keys.
///
/// The identity file is secret: ``save(path:passphrase:)`` writes it with mode 0600 and ``load(path:passphrase:)``
/// refuses a file readable by group or others. It can be locked with a passphrase (Argon2id + secretbox).
/// Format: docs/PROTOCOL.md, "Identity file".
public struct Identity: Sendable, CustomStringConvertible {
    public let userID: String
    public var displayName: String
    public let signingKey: SigningPrivateKey
    /// Oldest first; the last key without `retiredAtMs` is the current one.
    public private(set) var deviceKeys: [DeviceKey]

    /// The default time an older device key still opens pushes after rotation: 7 days.
    public static let defaultGracePeriodMs: UInt64 = 7 * 24 * 3600 * 1000

    /// Creates a new identity with fresh random keys.
    ///
    /// - Throws: `.invalidArgument` when the user id is not 1-64 bytes or the display name above 255 bytes.
    public static func generate(userID: String, displayName: String, nowMs: UInt64) throws(E2EEError) -> Identity {
        try Identity(
            userID: userID,
            displayName: displayName,
            signingKey: .generate(),
            deviceKeys: [DeviceKey(privateKey: .generate(), createdAtMs: nowMs, retiredAtMs: nil)]
        )
    }

    /// An identity from given keys (test vectors, imports). Device keys oldest first.
    @_spi(Vectors)
    public init(
        userID: String,
        displayName: String,
        signingKey: SigningPrivateKey,
        deviceKeys: [(key: X25519PrivateKey, createdAtMs: UInt64, retiredAtMs: UInt64?)]
    ) throws(E2EEError) {
        try self.init(
            userID: userID,
            displayName: displayName,
            signingKey: signingKey,
            deviceKeys: deviceKeys.map {
                DeviceKey(privateKey: $0.key, createdAtMs: $0.createdAtMs, retiredAtMs: $0.retiredAtMs)
            }
        )
    }

    init(userID: String, displayName: String, signingKey: SigningPrivateKey, deviceKeys: [DeviceKey]) throws(E2EEError)
    {
        guard (1...InnerMessage.maximumUserIDLength).contains(userID.utf8.count) else {
            throw E2EEError.invalidArgument("a user id is 1-64 bytes of UTF-8")
        }
        guard displayName.utf8.count <= 255 else {
            throw E2EEError.invalidArgument("a display name is at most 255 bytes")
        }
        guard (1...16).contains(deviceKeys.count) else {
            throw E2EEError.invalidArgument("an identity holds 1-16 device keys")
        }
        self.userID = userID
        self.displayName = displayName
        self.signingKey = signingKey
        self.deviceKeys = deviceKeys
    }

    /// The key senders should use: the newest key that is not retired.
    public var currentDeviceKey: DeviceKey {
        self.deviceKeys.last(where: { $0.retiredAtMs == nil }) ?? self.deviceKeys[self.deviceKeys.count - 1]
    }

    /// Adds a new current device key and retires the previous one at `nowMs`; keys retired for longer than
    /// `gracePeriodMs` are dropped, and at most 16 keys are kept.
    @discardableResult
    public mutating func rotate(nowMs: UInt64, gracePeriodMs: UInt64 = Identity.defaultGracePeriodMs) -> DeviceKey {
        for index in self.deviceKeys.indices where self.deviceKeys[index].retiredAtMs == nil {
            self.deviceKeys[index].retiredAtMs = nowMs
        }
        self.deviceKeys.removeAll { key in key.retiredAtMs.map { nowMs &- $0 > gracePeriodMs } ?? false }
        let key = DeviceKey(privateKey: .generate(), createdAtMs: nowMs, retiredAtMs: nil)
        self.deviceKeys.append(key)
        if self.deviceKeys.count > 16 { self.deviceKeys.removeFirst(self.deviceKeys.count - 16) }
        return key
    }

    /// The private key for `keyID` if this identity holds it and it is current or retired less than
    /// `gracePeriodMs` ago at `nowMs`.
    public func deviceKey(
        for keyID: KeyID,
        nowMs: UInt64,
        gracePeriodMs: UInt64 = Identity.defaultGracePeriodMs
    )
        -> X25519PrivateKey?
    {
        guard let key = self.deviceKeys.first(where: { $0.keyID == keyID }) else { return nil }
        if let retired = key.retiredAtMs, nowMs > retired, nowMs - retired > gracePeriodMs { return nil }
        return key.privateKey
    }

    /// This identity's public contact card.
    public func card(push: ContactCard.Push? = nil) -> ContactCard {
        ContactCard(
            userID: self.userID,
            displayName: self.displayName,
            signingKey: self.signingKey.publicKey,
            deviceKeys: self.deviceKeys.map {
                ContactCard.DeviceKeyEntry(
                    keyID: $0.keyID,
                    publicKey: $0.privateKey.publicKey,
                    createdAtMs: $0.createdAtMs,
                    retiredAtMs: $0.retiredAtMs
                )
            },
            push: push
        )
    }

    public var description: String {
        "Identity(\(self.userID), signing \(self.signingKey.publicKey.keyID), device keys \(self.deviceKeys.map(\.keyID)), secrets <redacted>)"
    }
}
