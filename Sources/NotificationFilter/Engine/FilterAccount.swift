public import E2EECore

/// One account the daemon serves: an identity (possibly locked), the contacts whose signatures it accepts, and
/// the account's own device list.
///
/// The own list is also a contact (docs/PROTOCOL.md §15.1): messages from the user's other devices verify, and a
/// cancel from another device of the same user (`answeredElsewhere`, `declinedElsewhere`) can stop a ringing call.
public struct FilterAccount: Sendable {
    /// The account's name in decisions and call events (default: the identity's user id).
    public let name: String
    /// The identity, or nil while the identity file is locked.
    public var identity: Identity?
    /// The key ids of this device's device keys; known even while locked when the own list was given.
    public var deviceKeyIDs: Set<KeyID>
    /// The contacts, the own device list included.
    public var contacts: ContactBook
    /// The user id of the account (the identity's, or the own list's while locked).
    public let userID: String
    /// The id of this device's signing key, when known: a cancel signed with it is this device's own, never
    /// "another device of the same user".
    public var ownSigningKeyID: KeyID?

    /// An unlocked account.
    ///
    /// - Parameter ownList: the user's own device list; added to `contacts` (it replaces a list of the same user
    ///   there), so the user's other devices are contacts.
    public init(name: String? = nil, identity: Identity, contacts: ContactBook, ownList: DeviceList? = nil) {
        self.name = name ?? identity.userID
        self.identity = identity
        self.deviceKeyIDs = Set(identity.deviceKeys.map(\.keyID))
        var book = contacts
        if let ownList { book.add(ownList) }
        self.contacts = book
        self.userID = identity.userID
        self.ownSigningKeyID = identity.signingKey.publicKey.keyID
    }

    /// A locked account: its payloads are kept until ``FilterEngine/unlock(account:identity:)``.
    ///
    /// - Parameters:
    ///   - deviceKeyIDs: this device's key ids (from its entry in the own list), so its payloads are recognised.
    ///   - userID: the account's user id (default: `name`).
    ///   - ownDevice: this device's entry in the own list, when known.
    public init(
        lockedName name: String,
        deviceKeyIDs: Set<KeyID>,
        contacts: ContactBook,
        userID: String? = nil,
        ownList: DeviceList? = nil,
        ownDevice: DeviceList.Device? = nil
    ) {
        self.name = name
        self.identity = nil
        self.deviceKeyIDs = deviceKeyIDs
        var book = contacts
        if let ownList { book.add(ownList) }
        self.contacts = book
        self.userID = userID ?? ownList?.userID ?? name
        self.ownSigningKeyID = ownDevice?.signingKey.keyID
    }

    public var isLocked: Bool { self.identity == nil }

    /// Sets the identity once unlocked: its key ids and signing key replace what the own list said.
    mutating func unlock(with identity: Identity) {
        self.identity = identity
        self.deviceKeyIDs = Set(identity.deviceKeys.map(\.keyID))
        self.ownSigningKeyID = identity.signingKey.publicKey.keyID
    }
}
