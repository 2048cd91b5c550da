public import E2EECore

/// The byte strings a device signs to authorise a request (docs/RELAY.md), and helpers to sign them.
///
/// The labels keep these signatures apart from message signatures, certificates and list signatures
/// (PROTOCOL §11.3): none can be passed off as another.
public enum RelayAuthorization: Sendable {
    package static let registerLabel = "e2ee-relay/register-push/v2"
    package static let tokensLabel = "e2ee-relay/delivery-tokens/v1"

    /// The most delivery tokens a user has at once.
    public static let maximumTokens = 64

    /// How far a request's `timestamp_ms` may be from the relay's clock.
    public static let window: Int64 = 5 * 60 * 1000
    /// How long a used nonce is remembered (longer than the window, so a replay inside it is always caught).
    public static let nonceRetention: Int64 = 10 * 60 * 1000

    package static func registerMessage(
        userID: String,
        deviceID: String,
        registration r: RelayAPI.PushRegistration,
        nonce: [UInt8]
    ) -> [UInt8] {
        var w = SignedBytes(label: Self.registerLabel)
        w.str8(userID)
        w.str8(deviceID)
        w.str8(r.service)
        w.str16(r.address)
        w.str8(r.environment ?? "")
        w.u64(r.timestampMs)
        w.raw(nonce)
        return w.bytes
    }

    package static func tokensMessage(
        userID: String,
        set t: RelayAPI.DeliveryTokenSet,
        hashes: [[UInt8]],
        nonce: [UInt8]
    )
        -> [UInt8]
    {
        var w = SignedBytes(label: Self.tokensLabel)
        w.str8(userID)
        w.str8(t.deviceID)
        w.u8(hashes.count)
        for hash in hashes { w.raw(hash) }
        w.u64(t.timestampMs)
        w.raw(nonce)
        return w.bytes
    }

    /// A push registration signed by the device's signing key.
    ///
    /// - Parameters:
    ///   - userID: The device's user.
    ///   - deviceID: The device (as in the user's list).
    ///   - address: The push address and, for APNs, the environment (`production` or `development`).
    ///   - signingKey: The device signing key (the identity's `signingKey`).
    ///   - nowMs: The device's clock.
    /// - Throws: `bad-push-address` for fields out of range; E2EECore's signing errors as `internal-error`.
    public static func signedRegistration(
        userID: String,
        deviceID: String,
        address: RegisteredAddress,
        signingKey: SigningPrivateKey,
        nowMs: UInt64
    ) throws(RelayError) -> RelayAPI.PushRegistration {
        try Identifiers.checkUserID(userID)
        try Identifiers.checkDeviceID(deviceID)
        try address.check()
        let nonce = RandomBytes.make(16)
        var registration = RelayAPI.PushRegistration(
            service: address.push.service.rawValue,
            address: address.push.address,
            environment: address.environment,
            timestampMs: nowMs,
            nonce: Hex.encode(nonce),
            signature: ""
        )
        let message = Self.registerMessage(userID: userID, deviceID: deviceID, registration: registration, nonce: nonce)
        registration.signature = Hex.encode(try Self.sign(message, signingKey))
        return registration
    }

    /// A delivery-token set signed by one of the user's devices.
    ///
    /// - Parameters:
    ///   - tokens: The delivery tokens (32 bytes each) the user's contacts may submit with; their SHA-256 is sent.
    public static func signedTokenSet(
        userID: String,
        deviceID: String,
        tokens: [DeliveryToken],
        signingKey: SigningPrivateKey,
        nowMs: UInt64
    ) throws(RelayError) -> RelayAPI.DeliveryTokenSet {
        try Identifiers.checkUserID(userID)
        try Identifiers.checkDeviceID(deviceID)
        guard tokens.count <= Self.maximumTokens else {
            throw RelayError(.badTokenSet, "at most \(Self.maximumTokens) delivery tokens per user")
        }
        let hashes = tokens.map(\.sha256)
        let nonce = RandomBytes.make(16)
        var set = RelayAPI.DeliveryTokenSet(
            deviceID: deviceID,
            tokenSHA256: hashes.map { Hex.encode($0) },
            timestampMs: nowMs,
            nonce: Hex.encode(nonce),
            signature: ""
        )
        let message = Self.tokensMessage(userID: userID, set: set, hashes: hashes, nonce: nonce)
        set.signature = Hex.encode(try Self.sign(message, signingKey))
        return set
    }

    private static func sign(_ message: [UInt8], _ key: SigningPrivateKey) throws(RelayError) -> [UInt8] {
        do throws(E2EEError) {
            return try key.signature(for: message)
        } catch {
            throw RelayError(.internalError, "signing failed: \(error.message)")
        }
    }
}
