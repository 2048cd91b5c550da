/// An error from the filter's durable state (the SQLite file behind ``FilterStateStore``).
///
/// The ``code`` is extensible: new codes can be added without breaking callers that switch over
/// the ones they know. Two errors are equal when their codes are equal; the message, the SQLite
/// result code and the source location are there for people reading logs.
public struct FilterStateError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable, extensible value.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case sqlite
            case corruptDatabase
            case foreignDatabase
            case schemaTooNew
            case invalidArgument
            case insecureFile
        }

        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// SQLite refused an operation (I/O error, disk full, busy beyond the timeout, constraint...).
        public static let sqlite = Code(.sqlite)
        /// The file is not an SQLite database or its pages are damaged.
        public static let corruptDatabase = Code(.corruptDatabase)
        /// The file is a valid SQLite database that belongs to something else.
        public static let foreignDatabase = Code(.foreignDatabase)
        /// The file was written by a newer version of the filter with a schema this build does not know.
        public static let schemaTooNew = Code(.schemaTooNew)
        /// A caller passed a value the store cannot hold (a message id that is not 16 bytes, a negative offset).
        public static let invalidArgument = Code(.invalidArgument)
        /// The state file (or its `-wal`/`-shm` companion) may be read or written by group or others; it holds
        /// call metadata, so it is refused until its owner runs `chmod 600` on it.
        public static let insecureFile = Code(.insecureFile)

        public var description: String {
            switch value {
            case .sqlite: "sqlite"
            case .corruptDatabase: "corruptDatabase"
            case .foreignDatabase: "foreignDatabase"
            case .schemaTooNew: "schemaTooNew"
            case .invalidArgument: "invalidArgument"
            case .insecureFile: "insecureFile"
            }
        }
    }

    /// What went wrong.
    public let code: Code
    /// What was wrong and what to do about it.
    public let message: String
    /// The SQLite result code (extended), when SQLite reported the failure.
    public let sqliteResultCode: Int32?
    /// Where the error was raised.
    public let fileID: String
    /// The line where the error was raised.
    public let line: Int

    init(code: Code, message: String, sqliteResultCode: Int32? = nil, fileID: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.sqliteResultCode = sqliteResultCode
        self.fileID = fileID
        self.line = line
    }

    public var description: String {
        let rc = sqliteResultCode.map { " (sqlite rc \($0))" } ?? ""
        return "FilterStateError.\(code): \(message)\(rc) [\(fileID):\(line)]"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    static func invalidArgument(_ message: String, fileID: String = #fileID, line: Int = #line) -> Self {
        Self(code: .invalidArgument, message: message, fileID: fileID, line: line)
    }
}
