#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension DeviceList.DeviceKeyEntry: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case suite
        case keyID = "key_id"
        case publicKey = "public_key"
        case createdAtMs = "created_at_ms"
        case retiredAtMs = "retired_at_ms"
        case expiresAtMs = "expires_at_ms"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        // §11.1: `suite` is the key's suite id, absent for suite 1 (the only suite of a version-2 list).
        let suiteID = try c.decodeIfPresent(UInt16.self, forKey: .suite) ?? CryptoSuite.classical.id
        guard let suite = CryptoSuite.withID(suiteID) else {
            throw E2EEError(
                .keyFile,
                "a device key is of crypto suite \(suiteID), which this release does not speak: update the app"
            )
        }
        let publicKey = try c.decode(HexBytes.self, forKey: .publicKey).bytes
        self.publicKey = try DevicePublicKey(suite: suite, rawRepresentation: publicKey)
        let keyID = try c.decode(KeyID.self, forKey: .keyID)
        guard keyID == self.publicKey.keyID else {
            throw E2EEError(.keyFile, "device key id \(keyID) does not match its public key")
        }
        self.createdAtMs = try c.decode(UInt64.self, forKey: .createdAtMs)
        self.retiredAtMs = try c.decodeIfPresent(UInt64.self, forKey: .retiredAtMs)
        self.expiresAtMs = try c.decodeIfPresent(UInt64.self, forKey: .expiresAtMs)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if self.publicKey.suite != .classical { try c.encode(self.publicKey.suite.id, forKey: .suite) }
        try c.encode(self.keyID, forKey: .keyID)
        try c.encode(HexBytes(self.publicKey.rawRepresentation), forKey: .publicKey)
        try c.encode(self.createdAtMs, forKey: .createdAtMs)
        try c.encodeIfPresent(self.retiredAtMs, forKey: .retiredAtMs)
        try c.encodeIfPresent(self.expiresAtMs, forKey: .expiresAtMs)
    }
}

struct HexBytes: Codable {
    var bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let bytes = Hex.decode(text) else { throw E2EEError(.keyFile, "\"\(text.prefix(20))…\" is not hex") }
        self.bytes = bytes
    }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(Hex.encode(self.bytes))
    }
}

extension DeviceList.Device: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case deviceID = "device_id"
        case signingKey = "signing_key"
        case signingKeyID = "signing_key_id"
        case signedInAtMs = "signed_in_at_ms"
        case certificate
        case deviceKeys = "device_keys"
        case push
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.deviceID = try c.decode(String.self, forKey: .deviceID)
        self.signingKey = try c.decode(SigningPublicKey.self, forKey: .signingKey)
        let keyID = try c.decode(KeyID.self, forKey: .signingKeyID)
        guard keyID == self.signingKey.keyID else {
            throw E2EEError(.keyFile, "device \"\(self.deviceID)\": signing_key_id does not match signing_key")
        }
        self.signedInAtMs = try c.decode(UInt64.self, forKey: .signedInAtMs)
        self.certificate = try c.decode(HexBytes.self, forKey: .certificate).bytes
        self.deviceKeys = try c.decode([DeviceList.DeviceKeyEntry].self, forKey: .deviceKeys)
        self.push = try c.decodeIfPresent(PushAddress.self, forKey: .push)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(self.deviceID, forKey: .deviceID)
        try c.encode(self.signingKey, forKey: .signingKey)
        try c.encode(self.signingKey.keyID, forKey: .signingKeyID)
        try c.encode(self.signedInAtMs, forKey: .signedInAtMs)
        try c.encode(HexBytes(self.certificate), forKey: .certificate)
        try c.encode(self.deviceKeys, forKey: .deviceKeys)
        try c.encodeIfPresent(self.push, forKey: .push)
    }
}

extension DeviceList: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case format, version
        case userID = "user_id"
        case displayName = "display_name"
        case userSigningKey = "user_signing_key"
        case userSigningKeyID = "user_signing_key_id"
        case listVersion = "list_version"
        case issuedAtMs = "issued_at_ms"
        case devices, signature
    }

    /// Decodes and checks well-formedness (§11.1). Signatures are checked by ``parse(_:)``.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let format = try c.decodeIfPresent(String.self, forKey: .format)
        let version = try c.decodeIfPresent(Int.self, forKey: .version)
        guard format == DeviceList.format, let version,
            [DeviceList.classicalFormatVersion, DeviceList.suitesFormatVersion].contains(version)
        else {
            if format == nil, version == 1 {
                throw E2EEError(
                    .keyFile,
                    "this is a single-device contact card of an earlier release (version 1), not a signed device list: ask its owner for their device list (e2ee-send card)"
                )
            }
            throw E2EEError(
                .keyFile,
                "not a device list: expected \"format\": \"e2ee-device-list\" and \"version\": 2 or 3, got \(format.map { "\"\($0)\"" } ?? "no format") and version \(version.map(String.init) ?? "none")"
            )
        }
        self.formatVersion = version
        self.userID = try c.decode(String.self, forKey: .userID)
        self.displayName = try c.decode(String.self, forKey: .displayName)
        self.userSigningKey = try c.decode(SigningPublicKey.self, forKey: .userSigningKey)
        guard try c.decode(KeyID.self, forKey: .userSigningKeyID) == self.userSigningKey.keyID else {
            throw E2EEError(.keyFile, "user_signing_key_id does not match user_signing_key")
        }
        self.listVersion = try c.decode(UInt64.self, forKey: .listVersion)
        self.issuedAtMs = try c.decode(UInt64.self, forKey: .issuedAtMs)
        self.devices = try c.decode([Device].self, forKey: .devices)
        self.signature = try c.decode(HexBytes.self, forKey: .signature).bytes
        try self.checkWellFormed()
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(DeviceList.format, forKey: .format)
        try c.encode(self.formatVersion, forKey: .version)
        try c.encode(self.userID, forKey: .userID)
        try c.encode(self.displayName, forKey: .displayName)
        try c.encode(self.userSigningKey, forKey: .userSigningKey)
        try c.encode(self.userSigningKey.keyID, forKey: .userSigningKeyID)
        try c.encode(self.listVersion, forKey: .listVersion)
        try c.encode(self.issuedAtMs, forKey: .issuedAtMs)
        try c.encode(self.devices, forKey: .devices)
        try c.encode(HexBytes(self.signature), forKey: .signature)
    }

    /// The list as pretty, key-sorted JSON with a final newline.
    public func jsonData() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return Array(try! encoder.encode(self)) + [0x0A]
    }

    /// Parses a list and verifies it (§11.4).
    ///
    /// - Throws: `.keyFile` (not well formed, with what is wrong), `.deviceNotSignedIn`, `.badListSignature`.
    public static func parse(_ bytes: [UInt8]) throws(E2EEError) -> DeviceList {
        // The form signers write takes the scan (DeviceList+Scan.swift); anything else, and every error, is
        // `JSONDecoder`'s.
        let list: DeviceList
        if let scanned = Self.scanned(bytes) {
            list = scanned
        } else {
            list = try Self.decoded(bytes)
        }
        try list.verifySignatures()
        return list
    }

    /// The list in `bytes` as `JSONDecoder` reads it, checked for well-formedness but not verified: what
    /// ``parse(_:)`` reads when the scan does not take the bytes. Public for the fuzzer's comparison of the two.
    @_spi(Testing) public static func decoded(_ bytes: [UInt8]) throws(E2EEError) -> DeviceList {
        do {
            return try JSONDecoder().decode(DeviceList.self, from: Data(bytes))
        } catch let error as E2EEError {
            // A key of the wrong length (`invalid-key` from the key types) is a malformed file here (§11.1).
            throw error.code == .keyFile ? error : E2EEError(.keyFile, error.message)
        } catch {
            throw E2EEError(.keyFile, "not a valid device list: \(error)")
        }
    }

    /// Reads and verifies a device list file.
    public static func load(path: String) throws(E2EEError) -> DeviceList {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw E2EEError(.keyFile, "cannot read device list \(path): check the path")
        }
        do {
            return try parse(Array(data))
        } catch {
            throw E2EEError(error.code, "\(path): \(error.message)")
        }
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

/// The contacts a device knows: verified device lists by user id. Messages are attributed by (user id, device
/// signing key id) to one device of a list.
public struct ContactBook: Sendable {
    public private(set) var lists: [String: DeviceList]
    public init(_ lists: [DeviceList] = []) {
        self.lists = Dictionary(lists.map { ($0.userID, $0) }, uniquingKeysWith: { _, new in new })
    }
    public mutating func add(_ list: DeviceList) { self.lists[list.userID] = list }
    /// The device of `userID` whose signing key has id `keyID`.
    public func device(userID: String, keyID: KeyID) -> DeviceList.Device? {
        self.lists[userID]?.device(signingKeyID: keyID)
    }
    /// The signing key of `userID`'s device whose key id is `keyID`.
    public func signingKey(userID: String, keyID: KeyID) -> SigningPublicKey? {
        self.device(userID: userID, keyID: keyID)?.signingKey
    }
}
