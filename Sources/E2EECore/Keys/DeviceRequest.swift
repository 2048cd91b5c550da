#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A new device's request to be signed in (docs/PROTOCOL.md §11.8): its public keys and a proof that it holds
/// its signing key. A device holding the user key turns it into a list entry with
/// ``DeviceList/signingIn(_:signer:nowMs:)``.
public struct DeviceRequest: Sendable, Hashable {
    public var userID: String
    public var deviceID: String
    public var signingKey: SigningPublicKey
    public var deviceKeys: [DeviceList.DeviceKeyEntry]
    public var push: PushAddress?
    public var createdAtMs: UInt64
    public var proof: [UInt8]

    public static let format = "e2ee-device-request"
    static let proofLabel: [UInt8] = Array("e2ee-push/device-request/v1".utf8) + [0]
    static let proofLabelWithSuites: [UInt8] = Array("e2ee-push/device-request/v3".utf8) + [0]

    /// The request's format (`"version"`, §11.8): 2 when every key is classical, 3 when one is not, as for lists.
    public var formatVersion: Int {
        self.deviceKeys.allSatisfy { $0.publicKey.suite == .classical }
            ? DeviceList.classicalFormatVersion : DeviceList.suitesFormatVersion
    }

    /// The request of `identity`'s device, signed with its device signing key.
    public static func make(
        for identity: Identity,
        push: PushAddress?,
        nowMs: UInt64
    ) throws(E2EEError)
        -> DeviceRequest
    {
        var request = DeviceRequest(
            userID: identity.userID,
            deviceID: identity.deviceID,
            signingKey: identity.signingKey.publicKey,
            deviceKeys: identity.publishedDeviceKeys,
            push: push,
            createdAtMs: nowMs,
            proof: []
        )
        request.proof = try identity.signingKey.signature(for: request.proofMessage())
        return request
    }

    /// The bytes the proof signs (label included). Version 3 has its own label and writes each key's suite.
    public func proofMessage() -> [UInt8] {
        var w = ByteWriter()
        let withSuites = self.formatVersion != DeviceList.classicalFormatVersion
        w.raw(withSuites ? DeviceRequest.proofLabelWithSuites : DeviceRequest.proofLabel)
        try! w.str8(self.userID, field: "user id")
        try! w.str8(self.deviceID, field: "device id")
        w.raw(self.signingKey.rawRepresentation)
        w.u8(UInt8(clamping: self.deviceKeys.count))
        for key in self.deviceKeys {
            if withSuites { w.u16(key.publicKey.suite.id) }
            w.raw(key.publicKey.rawRepresentation)
            w.u64(key.createdAtMs)
        }
        return w.bytes
    }

    /// Checks the request's form and its proof.
    ///
    /// - Throws: `.keyFile` (malformed) or `.badSignature` (the proof does not verify).
    public func verify() throws(E2EEError) {
        guard (1...InnerMessage.maximumUserIDLength).contains(self.userID.utf8.count) else {
            throw E2EEError(.keyFile, "a device request's user_id is 1-64 bytes")
        }
        do {
            try DeviceList.checkDeviceID(self.deviceID)
        } catch {
            throw E2EEError(.keyFile, error.message)
        }
        try DeviceList.checkKeyLifecycle(
            self.deviceKeys.map { ($0.retiredAtMs, $0.expiresAtMs) },
            device: self.deviceID
        )
        if let push = self.push { try DeviceList.checkPush(push, device: self.deviceID) }
        var times: [UInt64] = [self.createdAtMs]
        for key in self.deviceKeys { times += [key.createdAtMs, key.retiredAtMs ?? 0, key.expiresAtMs ?? 0] }
        guard times.allSatisfy({ $0 <= DeviceList.maximumInteger }) else {
            throw E2EEError(.keyFile, "a time in the device request is above 2^53 - 1")
        }
        guard self.signingKey.isValidSignature(self.proof, for: self.proofMessage()) else {
            throw E2EEError(
                .badSignature,
                "the request of device \"\(self.deviceID)\" is not signed by that device's key: it was altered; make a new one on the device (e2ee-send device request)"
            )
        }
    }
}

extension DeviceRequest: Codable {
    enum CodingKeys: String, CodingKey {
        case format, version
        case userID = "user_id"
        case deviceID = "device_id"
        case signingKey = "signing_key"
        case signingKeyID = "signing_key_id"
        case deviceKeys = "device_keys"
        case push
        case createdAtMs = "created_at_ms"
        case proof
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let version = try c.decodeIfPresent(Int.self, forKey: .version)
        guard try c.decodeIfPresent(String.self, forKey: .format) == DeviceRequest.format,
            let version, [DeviceList.classicalFormatVersion, DeviceList.suitesFormatVersion].contains(version)
        else {
            throw E2EEError(
                .keyFile,
                "not a device request: expected \"format\": \"e2ee-device-request\" and \"version\": 2 or 3 (make one with e2ee-send device request)"
            )
        }
        self.userID = try c.decode(String.self, forKey: .userID)
        self.deviceID = try c.decode(String.self, forKey: .deviceID)
        self.signingKey = try c.decode(SigningPublicKey.self, forKey: .signingKey)
        guard try c.decode(KeyID.self, forKey: .signingKeyID) == self.signingKey.keyID else {
            throw E2EEError(.keyFile, "signing_key_id does not match signing_key")
        }
        self.deviceKeys = try c.decode([DeviceList.DeviceKeyEntry].self, forKey: .deviceKeys)
        self.push = try c.decodeIfPresent(PushAddress.self, forKey: .push)
        self.createdAtMs = try c.decode(UInt64.self, forKey: .createdAtMs)
        self.proof = try c.decode(HexBytes.self, forKey: .proof).bytes
        guard version == self.formatVersion else {
            throw E2EEError(
                .keyFile,
                "a device request of version \(version) must have \(version == 2 ? "only classical keys" : "a key of another suite than the classical one")"
            )
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(DeviceRequest.format, forKey: .format)
        try c.encode(self.formatVersion, forKey: .version)
        try c.encode(self.userID, forKey: .userID)
        try c.encode(self.deviceID, forKey: .deviceID)
        try c.encode(self.signingKey, forKey: .signingKey)
        try c.encode(self.signingKey.keyID, forKey: .signingKeyID)
        try c.encode(self.deviceKeys, forKey: .deviceKeys)
        try c.encodeIfPresent(self.push, forKey: .push)
        try c.encode(self.createdAtMs, forKey: .createdAtMs)
        try c.encode(HexBytes(self.proof), forKey: .proof)
    }

    /// Pretty, key-sorted JSON with a final newline.
    public func jsonData() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return Array(try! encoder.encode(self)) + [0x0A]
    }

    /// Parses and verifies a request.
    public static func parse(_ bytes: [UInt8]) throws(E2EEError) -> DeviceRequest {
        let request: DeviceRequest
        do {
            request = try JSONDecoder().decode(DeviceRequest.self, from: Data(bytes))
        } catch let error as E2EEError {
            // A key of the wrong length (`invalid-key` from the key types) is a malformed file here (§11.1).
            throw error.code == .keyFile ? error : E2EEError(.keyFile, error.message)
        } catch {
            throw E2EEError(.keyFile, "not a valid device request: \(error)")
        }
        try request.verify()
        return request
    }
}

/// A sender's pins (docs/PROTOCOL.md §11.5): per user id, the user signing key it trusts, the highest list
/// version it accepted and that list's digest.
public struct DevicePins: Sendable, Hashable {
    public struct Pin: Sendable, Hashable {
        public var userSigningKey: SigningPublicKey
        public var listVersion: UInt64
        public var listDigest: [UInt8]
        public var pinnedAtMs: UInt64
    }

    /// What ``check(_:nowMs:)`` decided for an accepted list.
    public enum Outcome: Sendable, Hashable {
        /// The user was not pinned: the list's key is pinned now (trust on first use; show the fingerprint).
        case firstUse
        /// The pinned version itself.
        case unchanged
        /// A newer version than the pinned one; the pin moved to it.
        case newer(previousVersion: UInt64)
    }

    public private(set) var pins: [String: Pin]
    public init(pins: [String: Pin] = [:]) { self.pins = pins }

    /// Decides whether a verified `list` is accepted, and updates the pin when it is (§11.5).
    ///
    /// - Throws: `.signingKeyChanged`, `.listRollback` or `.listVersionReused`, saying what to do.
    public mutating func check(_ list: DeviceList, nowMs: UInt64) throws(E2EEError) -> Outcome {
        guard let pin = self.pins[list.userID] else {
            self.pin(list, nowMs: nowMs)
            return .firstUse
        }
        guard pin.userSigningKey == list.userSigningKey else {
            throw E2EEError(
                .signingKeyChanged,
                "\(list.userID)'s user key changed: pinned \(DeviceList.fingerprint(userID: list.userID, userSigningKey: pin.userSigningKey)), this list is signed by \(list.fingerprint). Compare the new fingerprint with \(list.userID) in person or on a call you trust, then accept it with `e2ee-send contact accept`; until then nothing is sent to \(list.userID)"
            )
        }
        if list.listVersion < pin.listVersion {
            throw E2EEError(
                .listRollback,
                "\(list.userID)'s device list is version \(list.listVersion), older than version \(pin.listVersion) seen before: whoever served it may be hiding a change (a removed device); fetch the current list"
            )
        }
        let digest = list.digest
        if list.listVersion == pin.listVersion {
            guard constantTimeEquals(digest, pin.listDigest) else {
                throw E2EEError(
                    .listVersionReused,
                    "\(list.userID)'s device list version \(list.listVersion) differs from the version \(pin.listVersion) seen before: two different lists carry one version; do not use it and tell \(list.userID)"
                )
            }
            return .unchanged
        }
        let previous = pin.listVersion
        self.pin(list, nowMs: nowMs, pinnedAtMs: pin.pinnedAtMs)
        return .newer(previousVersion: previous)
    }

    /// Trusts `list`'s user key from now on (an explicit acceptance of a changed key, §11.5 step 2).
    public mutating func accept(_ list: DeviceList, nowMs: UInt64) {
        self.pin(list, nowMs: nowMs)
    }

    /// Forgets a user.
    public mutating func remove(userID: String) { self.pins[userID] = nil }

    private mutating func pin(_ list: DeviceList, nowMs: UInt64, pinnedAtMs: UInt64? = nil) {
        self.pins[list.userID] = Pin(
            userSigningKey: list.userSigningKey,
            listVersion: list.listVersion,
            listDigest: list.digest,
            pinnedAtMs: pinnedAtMs ?? nowMs
        )
    }

    // MARK: file

    struct FilePin: Codable {
        var userSigningKey: SigningPublicKey
        var listVersion: UInt64
        var listDigest: HexBytes
        var pinnedAtMs: UInt64
        enum CodingKeys: String, CodingKey {
            case userSigningKey = "user_signing_key"
            case listVersion = "list_version"
            case listDigest = "list_digest"
            case pinnedAtMs = "pinned_at_ms"
        }
    }

    struct FileContents: Codable {
        var version: Int
        var pins: [String: FilePin]
    }

    /// The pins as JSON (`{"version":1,"pins":{…}}`).
    public func jsonData() -> [UInt8] {
        let contents = FileContents(
            version: 1,
            pins: self.pins.mapValues {
                FilePin(
                    userSigningKey: $0.userSigningKey,
                    listVersion: $0.listVersion,
                    listDigest: HexBytes($0.listDigest),
                    pinnedAtMs: $0.pinnedAtMs
                )
            }
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return Array(try! encoder.encode(contents)) + [0x0A]
    }

    /// Parses a pins file.
    public static func parse(_ bytes: [UInt8]) throws(E2EEError) -> DevicePins {
        do {
            let contents = try JSONDecoder().decode(FileContents.self, from: Data(bytes))
            guard contents.version == 1 else {
                throw E2EEError(.keyFile, "pins file version \(contents.version) is not supported")
            }
            return DevicePins(
                pins: try contents.pins.mapValues { (pin) throws(E2EEError) in
                    guard pin.listDigest.bytes.count == 32 else {
                        throw E2EEError(.keyFile, "a pin's list_digest is 32 bytes")
                    }
                    return Pin(
                        userSigningKey: pin.userSigningKey,
                        listVersion: pin.listVersion,
                        listDigest: pin.listDigest.bytes,
                        pinnedAtMs: pin.pinnedAtMs
                    )
                }
            )
        } catch let error as E2EEError {
            // A key of the wrong length (`invalid-key` from the key types) is a malformed file here (§11.1).
            throw error.code == .keyFile ? error : E2EEError(.keyFile, error.message)
        } catch {
            throw E2EEError(.keyFile, "not a valid pins file: \(error)")
        }
    }

    /// Reads a pins file; a missing file is no pins.
    public static func load(path: String) throws(E2EEError) -> DevicePins {
        guard FileManager.default.fileExists(atPath: path) else { return DevicePins() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw E2EEError(.keyFile, "cannot read pins file \(path): check its permissions")
        }
        do {
            return try parse(Array(data))
        } catch {
            throw E2EEError(.keyFile, "\(path): \(error.message)")
        }
    }

    /// Writes the pins file atomically (mode 0644: public keys and versions only).
    public func save(path: String) throws(E2EEError) {
        try SecretFile.writePublic(path: path, bytes: self.jsonData())
    }
}
