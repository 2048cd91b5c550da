public import E2EECore

/// The one error type of `Sender`: building and sending messages, sending through a relay, setting up the APNs
/// provider (its key, configuration and token registry).
///
/// `code` is extensible (new codes do not break callers, who compare against the static members; equality is on the
/// code only); `message` says what was wrong and what to do; `file` and `line` are where it was raised, for logs.
/// Exit statuses are the executable's: `e2ee-send` maps each code to one (sysexits.h values) in one table.
/// Failures of individual pushes are never thrown: ``APNsClient/send(_:)-(APNsRequest)`` returns them as an
/// ``APNsResult``.
public struct SenderError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's documented name (`missing-key`), as result lines carry it in `"error"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { self.rawValue }

        /// A flag or field has a bad value (bad UUID, bad hex, unknown kind).
        public static let usage = Code("usage")
        /// The device token is not hex of a plausible length.
        public static let badDeviceToken = Code("bad-device-token")
        /// The recipient is not in the contacts folder, or its card has no device token.
        public static let unknownRecipient = Code("unknown-recipient")
        /// The device's push address is of a service this sender does not deliver to (only `apns` today): that
        /// device gets no push, the others do.
        public static let unsupportedPushService = Code("unsupported-push-service")
        /// A card file could not be read (missing, no permission).
        public static let unreadableCard = Code("unreadable-card")
        /// A device list that is not well formed (docs/PROTOCOL.md §11.1, `key-file`), wherever it came from: a
        /// card file, a contacts folder or a relay. One code for one fault: the bytes are wrong, no signature or pin
        /// was even checked.
        public static let malformedList = Code("malformed-list")
        /// The text (or another message) does not fit the largest padding bucket.
        public static let tooLarge = Code("too-large")
        /// A batch line is not a valid request.
        public static let badRequest = Code("bad-request")
        /// The identity file or the APNs key file is missing or unreadable.
        public static let missingKey = Code("missing-key")
        /// A secret file is readable by others, or the identity is locked.
        public static let insecureKey = Code("insecure-key")
        /// APNs refused the push (a final non-200 answer).
        public static let rejected = Code("rejected")
        /// Delivery failed for now (timeout, connection, retries exhausted).
        public static let deliveryFailed = Code("delivery-failed")
        /// Standard output could not be written (the reader closed the pipe, disk full).
        public static let outputFailed = Code("output-failed")
        /// An output file or folder (identity, card) could not be created.
        public static let cannotCreate = Code("cannot-create")
        /// An error the program did not expect: a bug.
        public static let internalError = Code("internal-error")
        /// The pins file (docs/PROTOCOL.md §11.5) could not be read or is not a pins file.
        public static let unreadablePins = Code("unreadable-pins")

        // Sending through a relay (`--relay`, docs/RELAY.md "Client").

        /// The relay refused the delivery token (missing, unknown or revoked: 401/403): nothing was queued; get a
        /// current token from the recipient.
        public static let deliveryTokenRefused = Code("delivery-token-refused")
        /// The relay refused the submit for another reason (a device it does not know or cannot deliver to, a
        /// malformed request): nothing was queued.
        public static let relayRefused = Code("relay-refused")
        /// The relay could not be reached, was rate limiting or could not store (transport failure, 429, 503):
        /// send again later with the same message.
        public static let relayUnavailable = Code("relay-unavailable")
        /// A submit was written to the relay and no answer came, even after retrying with the same idempotency key:
        /// the relay may have queued it. Sending the same message again (the same message id) is safe: the
        /// recipient's filter silences a duplicate.
        public static let relayOutcomeUnknown = Code("relay-outcome-unknown")
        /// A server's TLS certificate does not verify against the trusted CA (`--relay-ca`, `--apns-ca`, else the
        /// system roots): a configuration error, nothing was sent.
        public static let untrustedCertificate = Code("untrusted-certificate")

        // Refusals of a recipient's device list (docs/PROTOCOL.md §11.4, §11.5): e2ee-send gives them all one exit
        // status, the one a script checks for "do not send to this user until a person looks".

        /// The recipient's list is signed by another user key than the pinned one (a new phone, or an attack):
        /// `e2ee-send contact accept` after comparing fingerprints.
        public static let signingKeyChanged = Code("signing-key-changed")
        /// The list's version is lower than one accepted before (someone serves an old list).
        public static let listRollback = Code("list-rollback")
        /// The list carries the version accepted before but other contents (two lists under one version).
        public static let listVersionReused = Code("list-version-reused")
        /// A device of the list has no valid certificate from the user key (an injected device).
        public static let deviceNotSignedIn = Code("device-not-signed-in")
        /// The list signature does not verify (the list was altered or forged).
        public static let badListSignature = Code("bad-list-signature")
        /// The list is another user's than the one addressed (`--to bob` found mallory's list in bob's card file, or
        /// a relay served another user's list).
        public static let userIDMismatch = Code("user-id-mismatch")

        // Setting up the APNs provider (`--deliver`, the relay's delivery).

        /// The `.p8` key file could not be read (missing, not a regular file, or an I/O error).
        public static let keyFileUnreadable = Code("key-file-unreadable")
        /// The `.p8` key file is readable by its group or by others; it must be `chmod 600`.
        public static let keyFileTooOpen = Code("key-file-too-open")
        /// The key file's contents are not a PKCS#8 P-256 private key in PEM form.
        public static let keyInvalid = Code("key-invalid")
        /// The environment variable that should name the key file is not set or empty.
        public static let keyEnvironmentVariableMissing = Code("key-environment-variable-missing")
        /// A configuration value is out of its allowed range or malformed.
        public static let invalidConfiguration = Code("invalid-configuration")
        /// The custom trusted CA file could not be read as PEM certificates.
        public static let trustedCAUnreadable = Code("trusted-ca-unreadable")
        /// The token registry file exists but could not be read or decoded.
        public static let registryFileUnreadable = Code("registry-file-unreadable")
        /// The token registry file could not be written.
        public static let registryFileUnwritable = Code("registry-file-unwritable")

        /// The codes that refuse a recipient's device list.
        public static let listRefusals: [Code] = [
            .signingKeyChanged, .listRollback, .listVersionReused, .deviceNotSignedIn, .badListSignature,
            .userIDMismatch,
        ]

        /// Every code, for decoding a code's name back (result lines) and for documentation.
        public static let all: [Code] = [
            .usage, .badDeviceToken, .unknownRecipient, .unreadableCard, .malformedList, .tooLarge, .badRequest,
            .missingKey, .insecureKey, .rejected, .deliveryFailed, .outputFailed, .cannotCreate, .internalError,
            .unreadablePins, .signingKeyChanged, .listRollback, .listVersionReused, .deviceNotSignedIn,
            .badListSignature, .userIDMismatch, .deliveryTokenRefused, .relayRefused, .relayUnavailable,
            .relayOutcomeUnknown, .untrustedCertificate, .keyFileUnreadable, .keyFileTooOpen, .keyInvalid,
            .keyEnvironmentVariableMissing, .invalidConfiguration, .trustedCAUnreadable, .registryFileUnreadable,
            .registryFileUnwritable, .unsupportedPushService,
        ]
    }

    public let code: Code
    /// What was wrong and what to do about it.
    public let message: String
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

    public var description: String { "\(self.code): \(self.message)" }
    public static func == (lhs: SenderError, rhs: SenderError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }

    /// Maps an E2EECore error met while loading keys or sealing.
    public init(_ error: E2EEError, context: String, file: String = #fileID, line: Int = #line) {
        let code: Code =
            switch error.code {
            case .tooLarge: .tooLarge
            case .insecureFile, .locked: .insecureKey
            case .invalidArgument: .usage
            case .signingKeyChanged: .signingKeyChanged
            case .listRollback: .listRollback
            case .listVersionReused: .listVersionReused
            case .deviceNotSignedIn: .deviceNotSignedIn
            case .badListSignature: .badListSignature
            case .userIDMismatch: .userIDMismatch
            default: .missingKey
            }
        self.init(code, "\(context): \(error.message)", file: file, line: line)
    }
}

/// The name `Sender`'s APNs provider errors had before they became ``SenderError``s (e2ee-relay still catches it
/// by this name).
public typealias APNsError = SenderError
