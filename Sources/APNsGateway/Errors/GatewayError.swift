/// An error raised while configuring, starting or running the local APNs gateway.
///
/// Every error carries an extensible ``Code``, a human message that says what was wrong and what to do, and the
/// place it was raised. Two errors are equal when their codes are equal, so callers match on `code` and new codes
/// can be added without breaking them.
public struct GatewayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure; compare with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable {
            case invalidConfiguration
            case invalidProviderKey
            case tlsSetupFailed
            case bindFailed
            case spoolIOFailed
            case notStarted
            case alreadyStarted
            case deliveryFailed
        }

        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The configuration is inconsistent (bad rates, empty topic, negative limits…).
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// A provider key file or value could not be read as a P-256 key.
        public static let invalidProviderKey = Code(.invalidProviderKey)
        /// The certificate authority, server certificate or TLS context could not be made or written.
        public static let tlsSetupFailed = Code(.tlsSetupFailed)
        /// The listening socket could not be bound.
        public static let bindFailed = Code(.bindFailed)
        /// The spool file could not be opened, read, written or synced.
        public static let spoolIOFailed = Code(.spoolIOFailed)
        /// The server was used before ``APNsGatewayServer/start()``.
        public static let notStarted = Code(.notStarted)
        /// ``APNsGatewayServer/start()`` was called twice.
        public static let alreadyStarted = Code(.alreadyStarted)
        /// A delivery sink refused a record.
        public static let deliveryFailed = Code(.deliveryFailed)

        public var description: String { self.value.rawValue }
    }

    /// What went wrong, for matching.
    public let code: Code
    /// What was wrong and what to do about it.
    public let message: String
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// Creates an error; prefer the static factories, which capture the call site.
    public init(code: Code, message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

    public var description: String { "GatewayError.\(self.code): \(self.message)" }

    public static func == (lhs: GatewayError, rhs: GatewayError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }

    static func invalidConfiguration(_ message: String, file: String = #fileID, line: Int = #line) -> GatewayError {
        GatewayError(code: .invalidConfiguration, message: message, file: file, line: line)
    }

    static func invalidProviderKey(_ message: String, file: String = #fileID, line: Int = #line) -> GatewayError {
        GatewayError(code: .invalidProviderKey, message: message, file: file, line: line)
    }

    static func tlsSetupFailed(_ message: String, file: String = #fileID, line: Int = #line) -> GatewayError {
        GatewayError(code: .tlsSetupFailed, message: message, file: file, line: line)
    }

    static func spoolIOFailed(_ message: String, file: String = #fileID, line: Int = #line) -> GatewayError {
        GatewayError(code: .spoolIOFailed, message: message, file: file, line: line)
    }
}
