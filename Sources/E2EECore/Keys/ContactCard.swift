#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A user's public contact card (JSON): what a sender needs to seal for one of the user's devices, and what a
/// recipient needs to verify that user's signatures. Format: docs/PROTOCOL.md, "Contact card".
public struct ContactCard: Sendable, Hashable, Codable {
    /// One device key as published.
    public struct DeviceKeyEntry: Sendable, Hashable, Codable {
        public var keyID: KeyID
        public var publicKey: X25519PublicKey
        public var createdAtMs: UInt64
        public var retiredAtMs: UInt64?

        enum CodingKeys: String, CodingKey {
            case keyID = "key_id"
            case publicKey = "public_key"
            case createdAtMs = "created_at_ms"
            case retiredAtMs = "retired_at_ms"
        }
    }

    /// Where the device receives pushes (optional; a relay normally knows this).
    public struct Push: Sendable, Hashable, Codable {
        public var deviceToken: String
        public var topic: String
        public init(deviceToken: String, topic: String) {
            self.deviceToken = deviceToken
            self.topic = topic
        }
        enum CodingKeys: String, CodingKey {
            case deviceToken = "device_token"
            case topic
        }
    }

    public var version: Int = 1
    public var userID: String
    public var displayName: String
    public var signingKey: SigningPublicKey
    public var deviceKeys: [DeviceKeyEntry]
    public var push: Push?

    public init(
        userID: String,
        displayName: String,
        signingKey: SigningPublicKey,
        deviceKeys: [DeviceKeyEntry],
        push: Push?
    ) {
        self.userID = userID
        self.displayName = displayName
        self.signingKey = signingKey
        self.deviceKeys = deviceKeys
        self.push = push
    }

    /// The key senders seal to: the newest key not retired.
    public var currentDeviceKey: DeviceKeyEntry? {
        self.deviceKeys.filter { $0.retiredAtMs == nil }.max { $0.createdAtMs < $1.createdAtMs }
    }

    enum CodingKeys: String, CodingKey {
        case version
        case userID = "user_id"
        case displayName = "display_name"
        case signingKey = "signing_key"
        case signingKeyID = "signing_key_id"
        case deviceKeys = "device_keys"
        case push
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.version = try c.decode(Int.self, forKey: .version)
        guard self.version == 1 else {
            throw E2EEError(.keyFile, "contact card version \(self.version) is not supported")
        }
        self.userID = try c.decode(String.self, forKey: .userID)
        guard (1...InnerMessage.maximumUserIDLength).contains(self.userID.utf8.count) else {
            throw E2EEError(.keyFile, "a contact card's user id is 1-64 bytes")
        }
        self.displayName = try c.decode(String.self, forKey: .displayName)
        self.signingKey = try c.decode(SigningPublicKey.self, forKey: .signingKey)
        let signingKeyID = try c.decode(KeyID.self, forKey: .signingKeyID)
        guard signingKeyID == self.signingKey.keyID else {
            throw E2EEError(.keyFile, "the card's signing_key_id does not match its signing_key")
        }
        self.deviceKeys = try c.decode([DeviceKeyEntry].self, forKey: .deviceKeys)
        for entry in self.deviceKeys where entry.keyID != entry.publicKey.keyID {
            throw E2EEError(.keyFile, "the card's device key id \(entry.keyID) does not match its public key")
        }
        guard self.currentDeviceKey != nil else { throw E2EEError(.keyFile, "the card has no current device key") }
        self.push = try c.decodeIfPresent(Push.self, forKey: .push)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(self.version, forKey: .version)
        try c.encode(self.userID, forKey: .userID)
        try c.encode(self.displayName, forKey: .displayName)
        try c.encode(self.signingKey, forKey: .signingKey)
        try c.encode(self.signingKey.keyID, forKey: .signingKeyID)
        try c.encode(self.deviceKeys, forKey: .deviceKeys)
        try c.encodeIfPresent(self.push, forKey: .push)
    }

    /// The card as pretty, key-sorted JSON.
    public func jsonData() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return Array(try! encoder.encode(self)) + [0x0A]
    }

    /// Parses a card. - Throws: `.keyFile` with what is wrong.
    public static func parse(_ bytes: [UInt8]) throws(E2EEError) -> ContactCard {
        do {
            return try JSONDecoder().decode(ContactCard.self, from: Data(bytes))
        } catch let error as E2EEError {
            throw error
        } catch {
            throw E2EEError(.keyFile, "not a valid contact card: \(error)")
        }
    }

    /// Reads a card file. - Throws: `.keyFile` when it cannot be read or parsed.
    public static func load(path: String) throws(E2EEError) -> ContactCard {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw E2EEError(.keyFile, "cannot read contact card \(path): check the path")
        }
        do {
            return try parse(Array(data))
        } catch {
            throw E2EEError(.keyFile, "\(path): \(error.message)")
        }
    }
}

extension X25519PublicKey: Codable {
    public init(from decoder: any Decoder) throws {
        let hex = try decoder.singleValueContainer().decode(String.self)
        guard let bytes = Hex.decode(hex) else { throw E2EEError(.keyFile, "a public key must be hex") }
        try self.init(rawRepresentation: bytes)
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(Hex.encode(self.rawRepresentation))
    }
}

extension SigningPublicKey: Codable {
    public init(from decoder: any Decoder) throws {
        let hex = try decoder.singleValueContainer().decode(String.self)
        guard let bytes = Hex.decode(hex) else { throw E2EEError(.keyFile, "a public key must be hex") }
        try self.init(rawRepresentation: bytes)
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(Hex.encode(self.rawRepresentation))
    }
}

/// The contacts a device knows: cards by user id, looked up by (user id, signing key id).
public struct ContactBook: Sendable {
    public private(set) var cards: [String: ContactCard]
    public init(_ cards: [ContactCard] = []) {
        self.cards = Dictionary(cards.map { ($0.userID, $0) }, uniquingKeysWith: { _, new in new })
    }
    public mutating func add(_ card: ContactCard) { self.cards[card.userID] = card }
    /// The signing key of `userID` if its id is `keyID`.
    public func signingKey(userID: String, keyID: KeyID) -> SigningPublicKey? {
        guard let card = self.cards[userID], card.signingKey.keyID == keyID else { return nil }
        return card.signingKey
    }
}
