/// One device key of an identity: a key of one crypto suite with its key id and lifetime (docs/PROTOCOL.md §11.1).
public struct DeviceKey: Sendable, CustomStringConvertible {
    public let privateKey: DevicePrivateKey
    public var keyID: KeyID { self.privateKey.publicKey.keyID }
    /// When the key was created (ms since the epoch).
    public let createdAtMs: UInt64
    /// When a newer key replaced it, or nil for the current key.
    public var retiredAtMs: UInt64?
    /// When the key stops opening envelopes (nil for the current key). Equal to `retiredAtMs`: revoked.
    public var expiresAtMs: UInt64?

    /// True when envelopes sealed to this key still open at `nowMs`.
    public func opens(atMs nowMs: UInt64) -> Bool {
        guard let expires = self.expiresAtMs else { return true }
        return nowMs < expires
    }

    public var description: String {
        "DeviceKey(\(self.privateKey.suite.name) \(self.keyID), created \(self.createdAtMs), retired \(self.retiredAtMs.map(String.init) ?? "-"), expires \(self.expiresAtMs.map(String.init) ?? "-"))"
    }
}

/// A user's identity on one device: the device's Ed25519 signing key, its device keys (each of one crypto suite) and,
/// on a device
/// that manages the user's device list, the user signing key (docs/PROTOCOL.md §11, §12).
///
/// The identity file is secret: ``save(path:passphrase:cost:)`` writes it with mode 0600 and
/// ``load(path:passphrase:)`` refuses a file readable by group or others. It can be locked with a passphrase
/// (Argon2id + secretbox).
public struct Identity: Sendable, CustomStringConvertible {
    public let userID: String
    public var displayName: String
    /// This device's name in the user's device list (§11.1: 1-32 bytes of `a-z 0-9 - _ .`).
    public let deviceID: String
    /// This device's signing key: it signs every inner message the device sends.
    public let signingKey: SigningPrivateKey
    /// The user signing key, present only on a device that manages the device list.
    public let userSigningKey: SigningPrivateKey?
    /// Oldest first; the last key is the current one (no `retiredAtMs`).
    public private(set) var deviceKeys: [DeviceKey]

    /// The default time an older device key still opens pushes after rotation: 7 days.
    public static let defaultGracePeriodMs: UInt64 = 7 * 24 * 3600 * 1000
    /// The device id `keygen` gives the first device of a user when none is named.
    public static let defaultDeviceID = "primary"

    /// Creates a new identity with fresh random keys.
    ///
    /// - Parameters:
    ///   - withUserKey: true for a user's first device, which holds the user signing key and so can sign the device
    ///     list; false for a device to be signed in by another (``DeviceRequest``).
    ///   - suite: the crypto suite of the first device key.
    /// - Throws: `.invalidArgument` when the user id is not 1-64 bytes, the device id not a valid device id, or the
    ///   display name above 255 bytes.
    public static func generate(
        userID: String,
        displayName: String,
        deviceID: String = Identity.defaultDeviceID,
        withUserKey: Bool = true,
        suite: CryptoSuite = .classical,
        nowMs: UInt64
    ) throws(E2EEError) -> Identity {
        try Identity(
            userID: userID,
            displayName: displayName,
            deviceID: deviceID,
            signingKey: .generate(),
            userSigningKey: withUserKey ? .generate() : nil,
            deviceKeys: [
                DeviceKey(privateKey: .generate(suite: suite), createdAtMs: nowMs, retiredAtMs: nil, expiresAtMs: nil)
            ]
        )
    }

    /// An identity from given keys (test vectors, imports). Device keys oldest first, the current one last.
    @_spi(Vectors)
    public init(
        userID: String,
        displayName: String,
        deviceID: String = Identity.defaultDeviceID,
        signingKey: SigningPrivateKey,
        userSigningKey: SigningPrivateKey? = nil,
        deviceKeys: [(key: DevicePrivateKey, createdAtMs: UInt64, retiredAtMs: UInt64?, expiresAtMs: UInt64?)]
    ) throws(E2EEError) {
        try self.init(
            userID: userID,
            displayName: displayName,
            deviceID: deviceID,
            signingKey: signingKey,
            userSigningKey: userSigningKey,
            deviceKeys: deviceKeys.map {
                DeviceKey(
                    privateKey: $0.key,
                    createdAtMs: $0.createdAtMs,
                    retiredAtMs: $0.retiredAtMs,
                    expiresAtMs: $0.expiresAtMs
                )
            }
        )
    }

    init(
        userID: String,
        displayName: String,
        deviceID: String,
        signingKey: SigningPrivateKey,
        userSigningKey: SigningPrivateKey?,
        deviceKeys: [DeviceKey]
    ) throws(E2EEError) {
        guard (1...InnerMessage.maximumUserIDLength).contains(userID.utf8.count) else {
            throw E2EEError.invalidArgument("a user id is 1-64 bytes of UTF-8")
        }
        guard displayName.utf8.count <= 255 else {
            throw E2EEError.invalidArgument("a display name is at most 255 bytes")
        }
        try DeviceList.checkDeviceID(deviceID)
        guard (1...16).contains(deviceKeys.count) else {
            throw E2EEError.invalidArgument("an identity holds 1-16 device keys")
        }
        try DeviceList.checkKeyLifecycle(
            deviceKeys.map { (retired: $0.retiredAtMs, expires: $0.expiresAtMs) },
            device: deviceID
        )
        self.userID = userID
        self.displayName = displayName
        self.deviceID = deviceID
        self.signingKey = signingKey
        self.userSigningKey = userSigningKey
        self.deviceKeys = deviceKeys
    }

    /// The key senders seal to: the last key, the only one not retired.
    public var currentDeviceKey: DeviceKey { self.deviceKeys[self.deviceKeys.count - 1] }

    /// Adds a new current device key. The previous one is retired at `nowMs` and keeps opening pushes until
    /// `nowMs + gracePeriodMs` (0 revokes it at once); keys already expired at `nowMs` are dropped, and at most 16
    /// keys are kept.
    ///
    /// - Parameter suite: the new key's crypto suite; nil keeps the current key's. Moving a device to another suite
    ///   is a rotation like any other: the old key opens what was sealed to it until its grace period ends.
    @discardableResult
    public mutating func rotate(
        nowMs: UInt64,
        gracePeriodMs: UInt64 = Identity.defaultGracePeriodMs,
        suite: CryptoSuite? = nil
    ) -> DeviceKey {
        let suite = suite ?? self.currentDeviceKey.privateKey.suite
        let (expires, overflow) = nowMs.addingReportingOverflow(gracePeriodMs)
        for index in self.deviceKeys.indices where self.deviceKeys[index].retiredAtMs == nil {
            self.deviceKeys[index].retiredAtMs = nowMs
            // Capped at 2^53 - 1: the largest time a device list carries (PROTOCOL §11.1).
            self.deviceKeys[index].expiresAtMs =
                overflow ? DeviceList.maximumInteger : min(expires, DeviceList.maximumInteger)
        }
        self.deviceKeys.removeAll { !$0.opens(atMs: nowMs) }
        let key = DeviceKey(privateKey: .generate(suite: suite), createdAtMs: nowMs, retiredAtMs: nil, expiresAtMs: nil)
        self.deviceKeys.append(key)
        if self.deviceKeys.count > 16 { self.deviceKeys.removeFirst(self.deviceKeys.count - 16) }
        return key
    }

    /// The private key for `keyID` if this identity holds it and it still opens at `nowMs` (its
    /// `expiresAtMs`, if any, is later than `nowMs`).
    public func deviceKey(for keyID: KeyID, nowMs: UInt64) -> DevicePrivateKey? {
        guard let key = self.deviceKeys.first(where: { $0.keyID == keyID }), key.opens(atMs: nowMs) else {
            return nil
        }
        return key.privateKey
    }

    /// This device's entry keys as published (§11.1).
    public var publishedDeviceKeys: [DeviceList.DeviceKeyEntry] {
        self.deviceKeys.map {
            DeviceList.DeviceKeyEntry(
                publicKey: $0.privateKey.publicKey,
                createdAtMs: $0.createdAtMs,
                retiredAtMs: $0.retiredAtMs,
                expiresAtMs: $0.expiresAtMs
            )
        }
    }

    public var description: String {
        "Identity(\(self.userID)/\(self.deviceID), signing \(self.signingKey.publicKey.keyID), user key \(self.userSigningKey.map { "\($0.publicKey.keyID)" } ?? "-"), device keys \(self.deviceKeys.map(\.keyID)), secrets <redacted>)"
    }
}

extension Identity {
    /// A one-device list of this identity (version 1), as `keygen` publishes it. The identity must hold the user
    /// key. - Throws: `.invalidArgument` when it does not.
    public func card(push: PushAddress? = nil, nowMs: UInt64 = 0) throws(E2EEError) -> DeviceList {
        try DeviceList.create(for: self, push: push, nowMs: nowMs)
    }
}
