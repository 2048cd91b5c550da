/// The one error type of NotificationFilter: its durable state, the call provider's refusals and failed actions,
/// the call event sinks, and the daemon's own files and configuration.
///
/// `code` is extensible: new codes can be added without breaking callers, who compare against the static members
/// (equality is on the code only). `message` says what was wrong and what to do, for people; `file` and `line` are
/// where the error was raised and ``sqliteResultCode`` what SQLite said, for logs (`--verbose`), never for people.
/// Exit statuses are the executable's: `e2ee-filter` maps each code to one.
public struct FilterError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable, extensible code; its `rawValue` is the name logs and call events carry.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { self.rawValue }

        // MARK: the state file (``FilterStateStore``)

        /// SQLite refused an operation (I/O error, disk full, busy beyond the timeout, constraint...).
        public static let sqlite = Code(rawValue: "sqlite")
        /// The file is not an SQLite database or its pages are damaged.
        public static let corruptDatabase = Code(rawValue: "corruptDatabase")
        /// The file is a valid SQLite database that belongs to something else.
        public static let foreignDatabase = Code(rawValue: "foreignDatabase")
        /// The file was written by a newer version of the filter with a schema this build does not know.
        public static let schemaTooNew = Code(rawValue: "schemaTooNew")
        /// A caller passed a value the store cannot hold (a message id that is not 16 bytes, a negative offset).
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// The state file (or its `-wal`/`-shm` companion) may be read or written by group or others; it holds
        /// call metadata, so it is refused until its owner runs `chmod 600` on it.
        public static let insecureFile = Code(rawValue: "insecureFile")

        // MARK: refusals of a new incoming call (CallKit's `CXErrorCodeIncomingCallError`)

        /// A live or recently ended call already has this id (a duplicate push or a retry).
        public static let callUUIDAlreadyExists = Code(rawValue: "callUUIDAlreadyExists")
        /// Do-not-disturb is on.
        public static let filteredByDoNotDisturb = Code(rawValue: "filteredByDoNotDisturb")
        /// The caller's handle is on the block list.
        public static let filteredByBlockList = Code(rawValue: "filteredByBlockList")
        /// As many calls are live as the configuration allows.
        public static let maximumCallsReached = Code(rawValue: "maximumCallsReached")
        /// The caller's handle type is not among the supported handle types.
        public static let unentitled = Code(rawValue: "unentitled")

        // MARK: user actions on a call (CallKit's request transaction errors)

        /// No live call has this id (it never rang, or already ended).
        public static let unknownCallUUID = Code(rawValue: "unknownCallUUID")
        /// The action does not apply in the call's state (answering a call that is already active).
        public static let invalidAction = Code(rawValue: "invalidAction")
        /// The filter serves no account of that name, or several and none was named.
        public static let unknownAccount = Code(rawValue: "unknownAccount")
        /// A call handoff was not reported to the call provider (iOS would terminate the app): a bug.
        public static let unreportedHandoff = Code(rawValue: "unreportedHandoff")

        // MARK: call event sinks

        /// The events file could not be opened.
        public static let cannotOpen = Code(rawValue: "cannotOpen")
        /// The hook command is empty.
        public static let invalidHookCommand = Code(rawValue: "invalidHookCommand")

        // MARK: the daemon's files and configuration

        /// A file the daemon reads or writes (input, spool, decisions, contacts, card, identity of an account) is
        /// missing, unreadable or does not fit.
        public static let unusableFile = Code(rawValue: "unusableFile")
        /// The accounts file (`--config`) cannot be read.
        public static let configUnreadable = Code(rawValue: "configUnreadable")
        /// The accounts file (`--config`) is not `{"accounts":[...]}`.
        public static let configInvalid = Code(rawValue: "configInvalid")
    }

    /// What went wrong.
    public let code: Code
    /// What was wrong and what to do about it.
    public let message: String
    /// The SQLite result code (extended), when SQLite reported the failure.
    public let sqliteResultCode: Int32?
    /// Where the error was raised.
    public let file: String
    /// The line where the error was raised.
    public let line: Int

    public init(
        code: Code,
        message: String,
        sqliteResultCode: Int32? = nil,
        file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.sqliteResultCode = sqliteResultCode
        self.file = file
        self.line = line
    }

    /// A file the daemon uses is missing, unreadable or does not fit (``Code/unusableFile``).
    public init(_ message: String, file: String = #fileID, line: Int = #line) {
        self.init(code: .unusableFile, message: message, file: file, line: line)
    }

    public var description: String {
        let rc = self.sqliteResultCode.map { " (sqlite rc \($0))" } ?? ""
        return "FilterError.\(self.code): \(self.message)\(rc) [\(self.file):\(self.line)]"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }

    static func invalidArgument(_ message: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(code: .invalidArgument, message: message, file: file, line: line)
    }
}
