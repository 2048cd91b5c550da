public import E2EECore

/// The error of the message-building side of `Sender`, with a stable code and the exit status the CLI uses.
///
/// Equality is on the code only. The message says what was wrong and what to do.
public struct SenderError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        /// The process exit status `e2ee-send` uses for this code (sysexits.h values).
        public let exitCode: Int32
        private init(_ rawValue: String, _ exitCode: Int32) {
            self.rawValue = rawValue
            self.exitCode = exitCode
        }
        public var description: String { self.rawValue }

        /// A flag or field has a bad value (bad UUID, bad hex, unknown kind). Exit 64 (EX_USAGE).
        public static let usage = Code("usage", 64)
        /// The device token is not hex of a plausible length. Exit 64.
        public static let badDeviceToken = Code("bad-device-token", 64)
        /// The recipient is not in the contacts folder, or its card has no device token. Exit 65 (EX_DATAERR).
        public static let unknownRecipient = Code("unknown-recipient", 65)
        /// A card file could not be read (missing, no permission). Exit 65.
        public static let unreadableCard = Code("unreadable-card", 65)
        /// A device list that is not well formed (docs/PROTOCOL.md §11.1, `key-file`), wherever it came from: a
        /// card file, a contacts folder or a relay. One code for one fault. Exit 65 (EX_DATAERR): the bytes are
        /// wrong, no signature or pin was even checked.
        public static let malformedList = Code("malformed-list", 65)
        /// The text (or another message) does not fit the largest padding bucket. Exit 65.
        public static let tooLarge = Code("too-large", 65)
        /// A batch line is not a valid request. Exit 65.
        public static let badRequest = Code("bad-request", 65)
        /// The identity file or the APNs key file is missing or unreadable. Exit 66 (EX_NOINPUT).
        public static let missingKey = Code("missing-key", 66)
        /// A secret file is readable by others, or the identity is locked. Exit 77 (EX_NOPERM).
        public static let insecureKey = Code("insecure-key", 77)
        /// APNs refused the push (a final non-200 answer). Exit 69 (EX_UNAVAILABLE).
        public static let rejected = Code("rejected", 69)
        /// Delivery failed for now (timeout, connection, retries exhausted). Exit 75 (EX_TEMPFAIL).
        public static let deliveryFailed = Code("delivery-failed", 75)
        /// Standard output could not be written (the reader closed the pipe, disk full). Exit 74 (EX_IOERR).
        public static let outputFailed = Code("output-failed", 74)
        /// An output file or folder (identity, card) could not be created. Exit 73 (EX_CANTCREAT).
        public static let cannotCreate = Code("cannot-create", 73)
        /// An error the program did not expect: a bug. Exit 70 (EX_SOFTWARE).
        public static let internalError = Code("internal-error", 70)
        /// The pins file (docs/PROTOCOL.md §11.5) could not be read or is not a pins file. Exit 65.
        public static let unreadablePins = Code("unreadable-pins", 65)

        // Sending through a relay (`--relay`, docs/RELAY.md "Client").

        /// The relay refused the delivery token (missing, unknown or revoked: 401/403): nothing was queued; get a
        /// current token from the recipient. Exit 77 (EX_NOPERM).
        public static let deliveryTokenRefused = Code("delivery-token-refused", 77)
        /// The relay refused the submit for another reason (a device it does not know or cannot deliver to, a
        /// malformed request): nothing was queued. Exit 69 (EX_UNAVAILABLE).
        public static let relayRefused = Code("relay-refused", 69)
        /// The relay could not be reached, was rate limiting or could not store (transport failure, 429, 503):
        /// send again later with the same message. Exit 75 (EX_TEMPFAIL).
        public static let relayUnavailable = Code("relay-unavailable", 75)
        /// A submit was written to the relay and no answer came, even after retrying with the same idempotency key:
        /// the relay may have queued it. Sending the same message again (the same message id) is safe: the
        /// recipient's filter silences a duplicate. Exit 79.
        public static let relayOutcomeUnknown = Code("relay-outcome-unknown", 79)
        /// A server's TLS certificate does not verify against the trusted CA (`--relay-ca`, `--apns-ca`, else the
        /// system roots): a configuration error, nothing was sent. Exit 78 (EX_CONFIG).
        public static let untrustedCertificate = Code("untrusted-certificate", 78)

        // Refusals of a recipient's device list (docs/PROTOCOL.md §11.4, §11.5): all exit 76 (EX_PROTOCOL), the one
        // status a script checks for "do not send to this user until a person looks".

        /// The recipient's list is signed by another user key than the pinned one (a new phone, or an attack):
        /// `e2ee-send contact accept` after comparing fingerprints. Exit 76.
        public static let signingKeyChanged = Code("signing-key-changed", 76)
        /// The list's version is lower than one accepted before (someone serves an old list). Exit 76.
        public static let listRollback = Code("list-rollback", 76)
        /// The list carries the version accepted before but other contents (two lists under one version). Exit 76.
        public static let listVersionReused = Code("list-version-reused", 76)
        /// A device of the list has no valid certificate from the user key (an injected device). Exit 76.
        public static let deviceNotSignedIn = Code("device-not-signed-in", 76)
        /// The list signature does not verify (the list was altered or forged). Exit 76.
        public static let badListSignature = Code("bad-list-signature", 76)
        /// The list is another user's than the one addressed (`--to bob` found mallory's list in bob's card file, or
        /// a relay served another user's list). Exit 76.
        public static let userIDMismatch = Code("user-id-mismatch", 76)

        /// The codes that refuse a recipient's device list (exit 76).
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
            .relayOutcomeUnknown, .untrustedCertificate,
        ]
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(self.code): \(self.message)" }
    public static func == (lhs: SenderError, rhs: SenderError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }

    /// Maps an E2EECore error met while loading keys or sealing.
    public init(_ error: E2EEError, context: String) {
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
        self.init(code, "\(context): \(error.message)")
    }
}
