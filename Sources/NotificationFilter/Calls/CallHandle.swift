/// The kind of address a caller is reached at, as in CallKit's `CXHandle.HandleType`.
public struct CallHandleType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// An app-specific identifier (a user id, an account name).
    public static let generic = Self(rawValue: "generic")
    /// A phone number.
    public static let phoneNumber = Self(rawValue: "phoneNumber")
    /// An email address.
    public static let emailAddress = Self(rawValue: "emailAddress")

    public var description: String { rawValue }
}

/// Who is calling: a handle type and its value.
public struct CallHandle: Hashable, Sendable, Codable {
    /// The kind of handle.
    public var type: CallHandleType
    /// The handle itself (never logged: it identifies a person).
    public var value: String

    public init(type: CallHandleType, value: String) {
        self.type = type
        self.value = value
    }
}
