/// The outcome of one push: what APNs answered, or why the push never got an answer.
///
/// APNs errors are results, not thrown errors: a batch of pushes yields one result per request, in order. Exactly
/// one of ``status`` and ``localOutcome`` is set.
public struct APNsResult: Sendable, Hashable {
    /// The hex device token the push was addressed to.
    public var deviceToken: String
    /// The `apns-id` APNs echoed (or assigned), else the one the request carried; `nil` if neither is known.
    public var apnsID: String?
    /// The HTTP status of the last response from APNs; `nil` when no response was received.
    public var status: Int?
    /// The decoded `reason` of an error response; `nil` for 200 and for local outcomes.
    public var reason: APNsReason?
    /// For 410: when the device token stopped being valid, in milliseconds since 1970 (as APNs sends it).
    public var timestamp: Int64?
    /// How many HTTP requests were made for this push (0 when it was refused locally).
    public var attempts: Int
    /// Why the push has no APNs answer (refused locally, timed out, connection failed); `nil` when APNs answered.
    public var localOutcome: APNsLocalOutcome?

    /// Creates a result; the client builds these, tests and callers may too.
    ///
    /// - Parameters:
    ///   - deviceToken: The hex device token.
    ///   - apnsID: The `apns-id`, if known.
    ///   - status: The HTTP status APNs answered, or `nil`.
    ///   - reason: The decoded error reason, or `nil`.
    ///   - timestamp: The 410 timestamp in milliseconds, or `nil`.
    ///   - attempts: The number of HTTP requests made.
    ///   - localOutcome: Why there is no APNs answer, or `nil`.
    public init(
        deviceToken: String,
        apnsID: String? = nil,
        status: Int? = nil,
        reason: APNsReason? = nil,
        timestamp: Int64? = nil,
        attempts: Int,
        localOutcome: APNsLocalOutcome? = nil
    ) {
        self.deviceToken = deviceToken
        self.apnsID = apnsID
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.attempts = attempts
        self.localOutcome = localOutcome
    }

    /// Whether APNs accepted the push (status 200).
    public var isSuccess: Bool { self.status == 200 }
}

/// Why a push has no answer from APNs: it was refused before sending, or the exchange failed locally.
///
/// A struct over a typed ``Code``, so new outcomes can be added without breaking callers, and callers decide on the
/// code (`switch outcome.kind { case .tokenInactive: ... }`), never on its name. Equality is on the code only; the
/// message says what happened for people and logs.
public struct APNsLocalOutcome: Sendable, Hashable, CustomStringConvertible {
    /// The kind of local outcome: extensible, compared and switched on as a value.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The outcome's stable name, for logs and JSON output (`"local"` of a result line).
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { self.rawValue }

        /// The token registry marked the device token inactive after a 410; no request was made.
        public static let tokenInactive = Code("tokenInactive")
        /// The device token breaks ``DeviceToken``'s rule; no request was made.
        public static let invalidDeviceToken = Code("invalidDeviceToken")
        /// APNs did not answer within the per-stream timeout (the push may or may not have been delivered).
        public static let timeout = Code("timeout")
        /// The connection could not be made or broke before an answer arrived.
        public static let connectionError = Code("connectionError")
        /// The server's TLS certificate did not verify against the trusted roots; no request was made.
        public static let untrustedCertificate = Code("untrustedCertificate")
        /// The client was shut down before or while sending.
        public static let clientShutdown = Code("clientShutdown")
        /// The sending task was cancelled.
        public static let cancelled = Code("cancelled")
    }

    /// What happened, as a typed code.
    public let kind: Code
    /// A human explanation (never contains the token, the JWT or the body).
    public let message: String

    private init(_ kind: Code, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The token registry marked this device token inactive after a 410; no request was made.
    public static func tokenInactive(since timestamp: Int64) -> APNsLocalOutcome {
        .init(.tokenInactive, "device token marked inactive by APNs at \(timestamp) ms; not sent")
    }
    /// The device token breaks ``DeviceToken``'s rule; no request was made.
    public static let invalidDeviceToken = APNsLocalOutcome(
        .invalidDeviceToken,
        "the device token is not 64 to 200 hex digits (an even count); not sent"
    )
    /// APNs did not answer within the per-stream timeout (the push may or may not have been delivered).
    public static func timeout(after duration: Duration) -> APNsLocalOutcome {
        .init(.timeout, "no answer from APNs within \(duration); stream cancelled")
    }
    /// The connection could not be made or broke before an answer arrived.
    public static func connectionError(_ detail: String) -> APNsLocalOutcome {
        .init(.connectionError, "connection to APNs failed: \(detail)")
    }
    /// The server's TLS certificate does not verify against the trusted CA (`trustedCAPEMPath`, else the system roots):
    /// nothing was sent, and sending again cannot help until the configuration changes.
    public static func untrustedCertificate(_ detail: String) -> APNsLocalOutcome {
        .init(.untrustedCertificate, "APNs is not trusted: \(detail)")
    }
    /// The client was shut down before or while sending.
    public static let clientShutdown = APNsLocalOutcome(.clientShutdown, "the APNs client is shut down; not sent")
    /// The sending task was cancelled.
    public static let cancelled = APNsLocalOutcome(.cancelled, "the send was cancelled")

    /// The outcome's stable name (``kind``'s raw value), for logs and JSON output.
    public var code: String { self.kind.rawValue }

    public var description: String { "\(self.code): \(self.message)" }

    public static func == (lhs: APNsLocalOutcome, rhs: APNsLocalOutcome) -> Bool { lhs.kind == rhs.kind }

    public func hash(into hasher: inout Hasher) { hasher.combine(self.kind) }
}
