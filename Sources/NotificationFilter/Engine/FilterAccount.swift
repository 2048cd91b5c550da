public import E2EECore

/// One account the daemon serves: an identity (possibly locked) and the contacts whose signatures it accepts.
public struct FilterAccount: Sendable {
    /// The account's name in decisions and call events (default: the identity's user id).
    public let name: String
    /// The identity, or nil while the identity file is locked.
    public var identity: Identity?
    /// The key ids of the account's device keys; known even while locked when a public card was given.
    public var deviceKeyIDs: Set<KeyID>
    public var contacts: ContactBook

    /// An unlocked account.
    public init(name: String? = nil, identity: Identity, contacts: ContactBook) {
        self.name = name ?? identity.userID
        self.identity = identity
        self.deviceKeyIDs = Set(identity.deviceKeys.map(\.keyID))
        self.contacts = contacts
    }

    /// A locked account: its payloads are kept until ``FilterEngine/unlock(account:identity:)``.
    public init(lockedName name: String, deviceKeyIDs: Set<KeyID>, contacts: ContactBook) {
        self.name = name
        self.identity = nil
        self.deviceKeyIDs = deviceKeyIDs
        self.contacts = contacts
    }

    public var isLocked: Bool { self.identity == nil }
}
