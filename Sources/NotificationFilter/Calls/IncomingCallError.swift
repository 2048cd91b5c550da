/// Why the provider refused to show a new incoming call (CallKit's `CXErrorCodeIncomingCallError`).
///
/// A refused report still counts as reported: the handoff rule is met. Equality is on ``code`` only.
public struct IncomingCallError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The refusal, as a stable, extensible value.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A live or recently ended call already has this id (a duplicate push or a retry).
        public static let callUUIDAlreadyExists = Self(rawValue: "callUUIDAlreadyExists")
        /// Do-not-disturb is on.
        public static let filteredByDoNotDisturb = Self(rawValue: "filteredByDoNotDisturb")
        /// The caller's handle is on the block list.
        public static let filteredByBlockList = Self(rawValue: "filteredByBlockList")
        /// As many calls are live as the configuration allows.
        public static let maximumCallsReached = Self(rawValue: "maximumCallsReached")
        /// The caller's handle type is not among the supported handle types.
        public static let unentitled = Self(rawValue: "unentitled")

        public var description: String { rawValue }
    }

    /// Why the call was refused.
    public let code: Code
    /// What was wrong and what to do about it.
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "IncomingCallError.\(code): \(message)" }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// Why a user action on a call could not be carried out (CallKit's request transaction errors).
///
/// Equality is on ``code`` only.
public struct CallActionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The failure, as a stable, extensible value.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// No live call has this id (it never rang, or already ended).
        public static let unknownCallUUID = Self(rawValue: "unknownCallUUID")
        /// The action does not apply in the call's state (answering a call that is already active).
        public static let invalidAction = Self(rawValue: "invalidAction")
        /// The filter serves no account of that name, or several and none was named.
        public static let unknownAccount = Self(rawValue: "unknownAccount")

        public var description: String { rawValue }
    }

    /// Why the action failed.
    public let code: Code
    /// What was wrong and what to do about it.
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "CallActionError.\(code): \(message)" }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
