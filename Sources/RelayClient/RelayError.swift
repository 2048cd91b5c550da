public import E2EECore

/// The one error type of the relay API (server and client): a reason code with its HTTP status, and a message for people.
///
/// `code` is extensible (a struct over a string, not an enum): new reasons can be added without breaking
/// callers. Equality is on the code only. `message` says what was wrong and what to do; it never contains a
/// delivery token, a device token, an envelope or a key.
public struct RelayError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A documented reason code (docs/RELAY.md) and the HTTP status the API answers with it.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The reason code as it appears in `{"error": ...}`.
        public let rawValue: String
        /// The HTTP status of an answer with this code.
        public let httpStatus: Int

        private init(_ rawValue: String, _ httpStatus: Int) {
            self.rawValue = rawValue
            self.httpStatus = httpStatus
        }

        public var description: String { self.rawValue }

        public static func == (lhs: Code, rhs: Code) -> Bool { lhs.rawValue == rhs.rawValue }
        public func hash(into hasher: inout Hasher) { hasher.combine(self.rawValue) }

        // MARK: request shape
        public static let malformedJSON = Code("malformed-json", 400)
        public static let bodyTooLarge = Code("body-too-large", 413)
        public static let badUserID = Code("bad-user-id", 400)
        public static let badDeviceID = Code("bad-device-id", 400)
        public static let notFound = Code("not-found", 404)

        // MARK: device lists
        public static let badDeviceList = Code("bad-device-list", 400)
        public static let userMismatch = Code("user-id-mismatch", 400)
        public static let signingKeyChanged = Code("signing-key-changed", 409)
        public static let listRollback = Code("list-rollback", 409)
        public static let listVersionReused = Code("list-version-reused", 409)
        public static let unknownUser = Code("unknown-user", 404)
        public static let unknownDevice = Code("unknown-device", 404)

        // MARK: device-signed requests
        public static let badAuthorization = Code("bad-authorization", 401)
        public static let staleAuthorization = Code("stale-authorization", 401)
        public static let replayedAuthorization = Code("replayed-authorization", 401)
        public static let badPushAddress = Code("bad-push-address", 400)
        public static let unsupportedEnvironment = Code("unsupported-environment", 400)
        /// The push address's topic is not one of the app topics this relay delivers for (`--apns-topic`).
        public static let topicNotAllowed = Code("topic-not-allowed", 400)
        /// The push address is of a service this relay does not deliver through (it delivers through `apns`); also
        /// the failed reason of a queued push whose address has no deliverer.
        public static let unsupportedPushService = Code("unsupported-push-service", 400)
        public static let badTokenSet = Code("bad-token-set", 400)

        // MARK: submits
        public static let missingIdempotencyKey = Code("missing-idempotency-key", 400)
        public static let badIdempotencyKey = Code("bad-idempotency-key", 400)
        public static let idempotencyKeyReused = Code("idempotency-key-reused", 409)
        public static let badPushCount = Code("bad-push-count", 400)
        public static let duplicateDevice = Code("duplicate-device", 400)
        public static let malformedEnvelope = Code("malformed-envelope", 400)
        public static let missingDeliveryToken = Code("missing-delivery-token", 401)
        public static let badDeliveryToken = Code("bad-delivery-token", 403)
        public static let rateLimited = Code("rate-limited", 429)
        public static let noPushAddress = Code("no-push-address", 409)
        public static let pushAddressUnregistered = Code("push-address-unregistered", 409)
        /// APNs refused the device's push address for good (BadDeviceToken, DeviceTokenNotForTopic, TopicDisallowed).
        public static let pushAddressFailed = Code("push-address-failed", 409)

        // MARK: the relay's own faults
        public static let storageUnavailable = Code("storage-unavailable", 503)
        /// The database's disk is full: nothing of the request was stored; pushes already accepted stay queued.
        public static let storageFull = Code("storage-full", 507)
        public static let draining = Code("draining", 503)
        public static let configuration = Code("configuration", 500)
        public static let internalError = Code("internal-error", 500)

        // MARK: client side (RelayClient)
        /// No connection to the relay could be made (refused, unreachable, connecting timed out): nothing was sent.
        public static let transport = Code("transport", 599)
        public static let unexpectedResponse = Code("unexpected-response", 598)
        /// The relay's TLS certificate does not verify against the trusted CA (`--relay-ca`, else the system roots):
        /// a configuration error, not retried.
        public static let untrustedCertificate = Code("untrusted-certificate", 597)
        /// The request was written and no answer came (the connection closed, the answer timed out): the relay may
        /// have carried it out. A submit is retried with the same idempotency key, which makes this safe to resolve.
        public static let outcomeUnknown = Code("outcome-unknown", 596)

        /// The code for a reason string received from a relay; unknown reasons keep their text.
        public static func received(_ reason: String, status: Int) -> Code { Code(reason, status) }
    }

    public let code: Code
    /// What was wrong and what to do.
    public let message: String
    /// Seconds the client should wait (429 and 503 answers).
    public let retryAfterSeconds: Int?
    /// For `bad-device-list` from ``RelayClient/fetchList(userID:)``: why the served list did not verify
    /// (`device-not-signed-in`: a device the user key did not sign in; `bad-list-signature`).
    public let listError: E2EEError.Code?
    public let fileID: String
    public let line: Int

    public init(
        _ code: Code,
        _ message: String,
        retryAfterSeconds: Int? = nil,
        listError: E2EEError.Code? = nil,
        fileID: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
        self.listError = listError
        self.fileID = fileID
        self.line = line
    }

    public var description: String { "RelayError.\(self.code): \(self.message)" }

    public static func == (lhs: RelayError, rhs: RelayError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }
}
