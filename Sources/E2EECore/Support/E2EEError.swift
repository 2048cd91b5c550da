/// The one error type of E2EECore.
///
/// `code` is extensible: new codes can be added without breaking callers, who compare against the static
/// members (equality is on the code only). `message` says what was wrong and what to do; it never contains key
/// material, plaintext or envelope bytes.
///
/// Every way an envelope can fail to *open* (AEAD failure, a low-order `enc`, a bad padding, a wrong key) yields
/// ``Code/openFailed``: the code is no decryption oracle. Framing, version, suite, key id, signature and size have
/// codes of their own because they are decided before decryption or after authentication.
public struct E2EEError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable, machine-readable error code. Its `rawValue` is the name documented in docs/PROTOCOL.md.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The documented name of the code, e.g. `"open-failed"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { self.rawValue }

        /// The APNs body or the envelope is not well formed (JSON, base64, field lengths, truncation).
        public static let malformedEnvelope = Code("malformed-envelope")
        /// The APNs body is valid JSON but carries no envelope key: not a payload of this protocol.
        public static let foreignPayload = Code("foreign-payload")
        /// The envelope's version byte is not one this implementation speaks.
        public static let unsupportedVersion = Code("unsupported-version")
        /// The envelope's suite id is not one this implementation speaks.
        public static let unsupportedSuite = Code("unsupported-suite")
        /// No device key of the recipient has the envelope's recipient key id (or it is past its grace period).
        public static let unknownRecipientKey = Code("unknown-recipient-key")
        /// The envelope could not be opened: every decryption failure maps here (no oracle).
        public static let openFailed = Code("open-failed")
        /// The decrypted inner message is not well formed.
        public static let malformedMessage = Code("malformed-message")
        /// The inner message names a sender (user id + signing key id) the recipient does not know.
        public static let unknownSender = Code("unknown-sender")
        /// The Ed25519 signature over the inner message does not verify.
        public static let badSignature = Code("bad-signature")
        /// The message does not fit the largest padding bucket, or a push body is above its transport's limit (APNs:
        /// 4,096 bytes, `APNsAlertTransport` in PushTransport).
        public static let tooLarge = Code("too-large")
        /// An argument is invalid (a field too long for its length prefix, a bad key size...).
        public static let invalidArgument = Code("invalid-argument")
        /// A key is invalid (wrong size, not on the curve, a low-order X25519 point).
        public static let invalidKey = Code("invalid-key")
        /// A secret file is readable by group or others, or could not be written with mode 0600.
        public static let insecureFile = Code("insecure-file")
        /// A key or card file could not be read, written or parsed.
        public static let keyFile = Code("key-file")
        /// The identity file is locked with a passphrase and the passphrase is missing or wrong.
        public static let locked = Code("locked")
        /// A libsodium call failed unexpectedly.
        public static let cryptoFailure = Code("crypto-failure")

        // MARK: device lists (docs/PROTOCOL.md §11.4, §11.5)

        /// A device in a device list has no valid certificate from the user signing key: it was not signed in.
        public static let deviceNotSignedIn = Code("device-not-signed-in")
        /// The device list's signature does not verify: something changed after the user key signed it.
        public static let badListSignature = Code("bad-list-signature")
        /// The list is signed by another user signing key than the one pinned for that user.
        public static let signingKeyChanged = Code("signing-key-changed")
        /// The list's version is below the highest version accepted before for that user.
        public static let listRollback = Code("list-rollback")
        /// The list has the version accepted before for that user, but different contents.
        public static let listVersionReused = Code("list-version-reused")
        /// The list is another user's than the one it was asked for (its `user_id` is not the addressed user: a
        /// contacts folder's `bob.card.json` holding mallory's list, a relay serving another user's list).
        public static let userIDMismatch = Code("user-id-mismatch")
    }

    public let code: Code
    public let message: String
    public let file: String
    public let line: Int

    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

    public var description: String { "\(self.code): \(self.message)" }

    public static func == (lhs: E2EEError, rhs: E2EEError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }

    // MARK: factories (capture the call site)

    static func malformed(_ what: String, file: String = #fileID, line: Int = #line) -> E2EEError {
        E2EEError(.malformedEnvelope, "malformed envelope: \(what)", file: file, line: line)
    }

    static func malformedMessage(_ what: String, file: String = #fileID, line: Int = #line) -> E2EEError {
        E2EEError(.malformedMessage, "malformed inner message: \(what)", file: file, line: line)
    }

    static func openFailed(file: String = #fileID, line: Int = #line) -> E2EEError {
        E2EEError(
            .openFailed,
            "the envelope could not be opened with this key (it was altered, or sealed for another key)",
            file: file,
            line: line
        )
    }

    static func invalidArgument(_ what: String, file: String = #fileID, line: Int = #line) -> E2EEError {
        E2EEError(.invalidArgument, what, file: file, line: line)
    }
}
