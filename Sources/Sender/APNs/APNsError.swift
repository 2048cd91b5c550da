/// An error from setting up the APNs provider: its key, its configuration, its token registry file.
///
/// Failures of individual pushes are never thrown: ``APNsClient/send(_:)-(APNsRequest)`` returns them as an
/// ``APNsResult``. This error is for the things a caller must fix before sending at all. Two errors are equal when
/// their ``code`` is equal; the message and source location are for people.
public struct APNsError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is: a closed set today, extensible without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case keyFileUnreadable
            case keyFileTooOpen
            case keyInvalid
            case keyEnvironmentVariableMissing
            case invalidConfiguration
            case trustedCAUnreadable
            case registryFileUnreadable
            case registryFileUnwritable
        }

        private let value: Value

        private init(_ value: Value) { self.value = value }

        /// The `.p8` key file could not be read (missing, not a regular file, or an I/O error).
        public static let keyFileUnreadable = Code(.keyFileUnreadable)
        /// The `.p8` key file is readable by its group or by others; it must be `chmod 600`.
        public static let keyFileTooOpen = Code(.keyFileTooOpen)
        /// The key file's contents are not a PKCS#8 P-256 private key in PEM form.
        public static let keyInvalid = Code(.keyInvalid)
        /// The environment variable that should name the key file is not set or empty.
        public static let keyEnvironmentVariableMissing = Code(.keyEnvironmentVariableMissing)
        /// A configuration value is out of its allowed range or malformed.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The custom trusted CA file could not be read as PEM certificates.
        public static let trustedCAUnreadable = Code(.trustedCAUnreadable)
        /// The token registry file exists but could not be read or decoded.
        public static let registryFileUnreadable = Code(.registryFileUnreadable)
        /// The token registry file could not be written.
        public static let registryFileUnwritable = Code(.registryFileUnwritable)

        public var description: String {
            switch self.value {
            case .keyFileUnreadable: "keyFileUnreadable"
            case .keyFileTooOpen: "keyFileTooOpen"
            case .keyInvalid: "keyInvalid"
            case .keyEnvironmentVariableMissing: "keyEnvironmentVariableMissing"
            case .invalidConfiguration: "invalidConfiguration"
            case .trustedCAUnreadable: "trustedCAUnreadable"
            case .registryFileUnreadable: "registryFileUnreadable"
            case .registryFileUnwritable: "registryFileUnwritable"
            }
        }
    }

    /// The kind of failure; compare errors by this.
    public let code: Code
    /// What was wrong and what to do about it.
    public let message: String
    /// The source file that raised the error.
    public let fileID: String
    /// The source line that raised the error.
    public let line: Int

    init(_ code: Code, _ message: String, fileID: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.fileID = fileID
        self.line = line
    }

    public var description: String { "APNsError.\(self.code): \(self.message)" }

    public static func == (lhs: APNsError, rhs: APNsError) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }
}
