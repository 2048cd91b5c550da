public import E2EECore

/// How one push service carries an envelope: the body bytes it sends and the limit it puts on them.
///
/// E2EECore knows only envelopes and padding tables (docs/PROTOCOL.md §5-§6). A push transport frames an
/// ``Envelope`` into the body its service delivers to the device, and unframes such a body back into the envelope,
/// with the service's own size limit, and says which padding buckets fit that limit for each crypto suite. Adding another push service means adding a conforming type here (or anywhere
/// else), not changing the core: ``PushPayload/seal(_:to:signingKey:padding:)`` and ``PushPayload/open(_:deviceKey:signingKey:)``
/// work on envelopes whatever carries them.
///
/// This is a separate library, not part of Sender, because both sides need it: senders and the relay frame bodies
/// (Sender re-exports this module as its APNs layer), and the device side (NotificationFilter, which models the
/// notification service extension) unframes the same bodies without linking an HTTP/2 or TLS stack.
public protocol PushTransport: Sendable {
    /// A short name for logs and errors (e.g. "apns").
    static var name: String { get }

    /// The largest body, in bytes, the service delivers. ``envelope(fromBody:)`` refuses a longer one with
    /// `.tooLarge`, and every padding bucket's body must fit.
    static var maximumBodyLength: Int { get }

    /// The padding buckets of each crypto suite this transport carries: every one's body fits
    /// ``maximumBodyLength``. A suite without buckets is not carried (sealing for it is refused).
    static var padding: PaddingTable { get }

    /// The body that carries `envelope`. Deterministic: the same envelope gives the same bytes.
    ///
    /// - Parameter envelope: a parsed envelope (its ciphertext is a padding bucket + the suite's tag).
    /// - Returns: at most ``maximumBodyLength`` bytes.
    static func body(for envelope: Envelope) -> [UInt8]

    /// The envelope a body carries.
    ///
    /// - Throws: `.tooLarge` for a body above ``maximumBodyLength``; `.malformedEnvelope` for bad framing;
    ///   `.foreignPayload` for a body of the service that is not ours; then what ``Envelope/init(parsing:)``
    ///   throws.
    static func envelope(fromBody body: [UInt8]) throws(E2EEError) -> Envelope

    /// The byte length of the body for an envelope of `suite` padded to `bucket` (one of `padding`'s buckets for
    /// the suite).
    static func bodyLength(forBucket bucket: Int, suite: CryptoSuite) -> Int

    /// What is wrong with `token` as the service's token of one device (a spool line's `device_token`,
    /// `e2ee-filter run --device-token`), or nil when it is one. By default any non-empty token.
    static func deviceTokenProblem(_ token: String) -> String?

    /// Whether two tokens name the same device. By default, when they are equal.
    static func isSameDevice(_ token: String, _ other: String) -> Bool
}

extension PushTransport {
    public static func deviceTokenProblem(_ token: String) -> String? {
        token.isEmpty ? "a device token is not empty" : nil
    }

    public static func isSameDevice(_ token: String, _ other: String) -> Bool { token == other }
}

/// The push transports a device-side tool can be told to read (`e2ee-filter --transport`), by ``PushTransport/name``.
/// Adding a service is its transport and its entry here.
public enum PushTransports: Sendable {
    public static let all: [any PushTransport.Type] = [APNsAlertTransport.self]

    /// The transport named `name`, or nil.
    public static func named(_ name: String) -> (any PushTransport.Type)? {
        Self.all.first { $0.name == name }
    }

    /// The names, for help and messages ("apns").
    public static var names: String { Self.all.map { $0.name }.joined(separator: ", ") }
}

extension SealedPush {
    /// The body `transport` sends for this push.
    public func framedBody<T: PushTransport>(_ transport: T.Type) -> [UInt8] {
        T.body(for: self.envelope)
    }

    /// The exact APNs body (ASCII JSON) of docs/PROTOCOL.md §4.
    public var apnsBody: [UInt8] { APNsAlertTransport.body(for: self.envelope) }

    /// The APNs body as text.
    public var apnsBodyString: String { String(decoding: self.apnsBody, as: UTF8.self) }
}

extension PushPayload {
    /// Seals `message` for one recipient device key into an envelope `transport` carries (APNs by default): see
    /// ``PushPayload/seal(_:to:signingKey:padding:)``, with the transport's padding buckets.
    public static func seal<T: PushTransport>(
        _ message: InnerMessage,
        to recipient: DevicePublicKey,
        signingKey: SigningPrivateKey,
        transport: T.Type = APNsAlertTransport.self
    ) throws(E2EEError) -> SealedPush {
        try self.seal(message, to: recipient, signingKey: signingKey, padding: T.padding)
    }

    /// Opens a push body of `transport` (APNs by default): unframes, parses, decrypts, unpads, decodes and verifies.
    ///
    /// - Parameters:
    ///   - body: the body bytes as the push service delivered them.
    ///   - transport: the push service that framed the body.
    ///   - deviceKey: returns the device's private key for a key id, or nil if none (or past its grace period).
    ///   - signingKey: returns the sender's Ed25519 public key for (user id, signing key id), or nil if unknown.
    /// - Throws: see docs/PROTOCOL.md "Error codes": what ``PushTransport/envelope(fromBody:)`` throws
    ///   (`.tooLarge`, `.malformedEnvelope`, `.foreignPayload`, ...), then what
    ///   ``PushPayload/open(_:deviceKey:signingKey:)`` throws.
    public static func open<T: PushTransport>(
        body: [UInt8],
        transport: T.Type = APNsAlertTransport.self,
        deviceKey: (KeyID) -> DevicePrivateKey?,
        signingKey: (_ userID: String, _ keyID: KeyID) -> SigningPublicKey?
    ) throws(E2EEError) -> OpenedPush {
        try self.open(try T.envelope(fromBody: body), deviceKey: deviceKey, signingKey: signingKey)
    }
}
