#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A user's public card: every device of the user, each signed in by the user signing key, and the whole list
/// signed by it. Format and verification rules: docs/PROTOCOL.md §11.
///
/// A value of this type is always well formed (§11.1); ``parse(_:)`` and ``load(path:)`` also verify the
/// certificates and the signature (§11.4), so a parsed list was signed by its `userSigningKey`. Whether that
/// key is the one to trust for the user is the caller's decision (``DevicePins``).
public struct DeviceList: Sendable, Hashable {
    /// One device key as published: a public key of one crypto suite.
    public struct DeviceKeyEntry: Sendable, Hashable {
        public var publicKey: DevicePublicKey
        public var createdAtMs: UInt64
        /// When a newer key replaced it; nil for the current key.
        public var retiredAtMs: UInt64?
        /// When it stops opening envelopes; nil for the current key.
        public var expiresAtMs: UInt64?
        public var keyID: KeyID { self.publicKey.keyID }

        public init(publicKey: DevicePublicKey, createdAtMs: UInt64, retiredAtMs: UInt64?, expiresAtMs: UInt64?) {
            self.publicKey = publicKey
            self.createdAtMs = createdAtMs
            self.retiredAtMs = retiredAtMs
            self.expiresAtMs = expiresAtMs
        }
    }

    /// One signed-in device.
    public struct Device: Sendable, Hashable {
        public var deviceID: String
        /// The device's Ed25519 key: it signs the messages the device sends.
        public var signingKey: SigningPublicKey
        public var signedInAtMs: UInt64
        /// The user signing key's signature over the device (§11.2).
        public var certificate: [UInt8]
        /// Oldest first; the last is the current key.
        public var deviceKeys: [DeviceKeyEntry]
        /// Where the device receives pushes. Not signed (§11.1): it only says where ciphertext goes.
        public var push: PushAddress?

        /// The key senders seal to (§11.1: the last, the only one not retired).
        public var currentKey: DeviceKeyEntry { self.deviceKeys[self.deviceKeys.count - 1] }
    }

    public internal(set) var userID: String
    public internal(set) var displayName: String
    public internal(set) var userSigningKey: SigningPublicKey
    /// Goes up by one with every signed change; senders refuse a lower one (§11.5).
    public internal(set) var listVersion: UInt64
    /// When the list was signed (informational).
    public internal(set) var issuedAtMs: UInt64
    public internal(set) var devices: [Device]
    public internal(set) var signature: [UInt8]
    /// The format of this list (`"version"` in JSON, §11.1): 2 when every device key is of the classical suite (the
    /// suite is implied), 3 when one is not (each key's suite is written and signed). A signer writes the lowest
    /// format that holds its keys, so lists of users who never left the classical suite stay readable by earlier
    /// releases.
    public internal(set) var formatVersion: Int

    /// The format of a list whose keys are all of the classical suite.
    public static let classicalFormatVersion = 2
    /// The format of a list with a key of another suite.
    public static let suitesFormatVersion = 3
    /// The `"format"` value of a device list.
    public static let format = "e2ee-device-list"
    /// The most devices a user can have.
    public static let maximumDevices = 16
    /// The largest integer a list carries (JSON numbers are exact up to 2^53 − 1).
    public static let maximumInteger: UInt64 = (1 << 53) - 1

    static let certificateLabel: [UInt8] = Array("e2ee-push/device-cert/v1".utf8) + [0]
    static let listLabel: [UInt8] = Array("e2ee-push/device-list/v1".utf8) + [0]
    static let listLabelWithSuites: [UInt8] = Array("e2ee-push/device-list/v3".utf8) + [0]

    /// The format that holds `devices`' keys: 2 when all are classical, else 3.
    static func formatVersion(for devices: [Device]) -> Int {
        devices.allSatisfy { $0.deviceKeys.allSatisfy { $0.publicKey.suite == .classical } }
            ? classicalFormatVersion : suitesFormatVersion
    }

    /// The label of this list's signature (§11.3): one per format.
    var signatureLabel: [UInt8] {
        self.formatVersion == DeviceList.classicalFormatVersion ? DeviceList.listLabel : DeviceList.listLabelWithSuites
    }
    static let fingerprintLabel: [UInt8] = Array("e2ee-push/fingerprint/v1".utf8) + [0]

    // MARK: lookups

    /// The device whose signing key has `keyID`.
    public func device(signingKeyID keyID: KeyID) -> Device? {
        self.devices.first { $0.signingKey.keyID == keyID }
    }

    /// The device named `deviceID`.
    public func device(named deviceID: String) -> Device? {
        self.devices.first { $0.deviceID == deviceID }
    }

    /// The short fingerprint people compare (§11.6): 20 hex digits in groups of four.
    public var fingerprint: String { DeviceList.fingerprint(userID: self.userID, userSigningKey: self.userSigningKey) }

    /// The fingerprint of a user id and user signing key (§11.6).
    public static func fingerprint(userID: String, userSigningKey: SigningPublicKey) -> String {
        var w = ByteWriter()
        w.raw(fingerprintLabel)
        try! w.str8(userID, field: "user id")
        w.raw(userSigningKey.rawRepresentation)
        let hex = Hex.encode(Primitives.sha256(w.bytes).prefix(10))
        var groups: [Substring] = []
        var rest = Substring(hex)
        while !rest.isEmpty {
            groups.append(rest.prefix(4))
            rest = rest.dropFirst(4)
        }
        return groups.joined(separator: " ")
    }

    /// SHA-256 of the signed bytes (§11.5: the pin's digest).
    public var digest: [UInt8] { Primitives.sha256(self.toBeSigned()) }

    // MARK: signed bytes

    /// The bytes a device certificate signs (label included, §11.2).
    public static func certificateMessage(
        userID: String,
        deviceID: String,
        signingKey: SigningPublicKey,
        signedInAtMs: UInt64
    ) -> [UInt8] {
        var w = ByteWriter()
        w.raw(certificateLabel)
        try! w.str8(userID, field: "user id")
        try! w.str8(deviceID, field: "device id")
        w.raw(signingKey.rawRepresentation)
        w.u64(signedInAtMs)
        return w.bytes
    }

    /// `list_tbs` (§11.3), without the label. Format 3 starts with 0x00 0x03 (a format-2 `list_tbs` starts with the
    /// user id's non-zero length) and writes each key's suite before its public key.
    public func toBeSigned() -> [UInt8] {
        var w = ByteWriter()
        let withSuites = self.formatVersion != DeviceList.classicalFormatVersion
        if withSuites {
            w.u8(0x00)
            w.u8(UInt8(DeviceList.suitesFormatVersion))
        }
        try! w.str8(self.userID, field: "user id")
        try! w.str8(self.displayName, field: "display name")
        w.raw(self.userSigningKey.rawRepresentation)
        w.u64(self.listVersion)
        w.u64(self.issuedAtMs)
        w.u8(UInt8(self.devices.count))
        for device in self.devices {
            try! w.str8(device.deviceID, field: "device id")
            w.raw(device.signingKey.rawRepresentation)
            w.u64(device.signedInAtMs)
            w.raw(device.certificate)
            w.u8(UInt8(device.deviceKeys.count))
            for key in device.deviceKeys {
                if withSuites { w.u16(key.publicKey.suite.id) }
                w.raw(key.publicKey.rawRepresentation)
                w.u64(key.createdAtMs)
                w.u64(key.retiredAtMs ?? 0)
                w.u64(key.expiresAtMs ?? 0)
            }
        }
        return w.bytes
    }

    // MARK: verification (§11.4)

    /// Checks every certificate, then the list signature.
    ///
    /// - Throws: `.deviceNotSignedIn` (naming the device) or `.badListSignature`.
    public func verifySignatures() throws(E2EEError) {
        for device in self.devices {
            let message = DeviceList.certificateMessage(
                userID: self.userID,
                deviceID: device.deviceID,
                signingKey: device.signingKey,
                signedInAtMs: device.signedInAtMs
            )
            guard self.userSigningKey.isValidSignature(device.certificate, for: message) else {
                throw E2EEError(
                    .deviceNotSignedIn,
                    "\(self.userID)'s device list holds a device \"\(device.deviceID)\" that \(self.userID)'s user key did not sign in: the list was altered by whoever stored or served it; do not use it"
                )
            }
        }
        guard self.userSigningKey.isValidSignature(self.signature, for: self.signatureLabel + self.toBeSigned())
        else {
            throw E2EEError(
                .badListSignature,
                "\(self.userID)'s device list does not match its signature: it was changed after \(self.userID)'s user key signed it (a device removed or a key edited); do not use it"
            )
        }
    }

    /// Checks that this list is the one asked for (§11.4 step 4): its `user_id` is the addressed user's. Pins
    /// are kept per user id (§11.5), so a list checked only against its own `user_id` could stand in for another
    /// user's: a valid, self-signed list of mallory's in place of bob's card would be pinned as mallory's and sealed
    /// to, and bob's pin would never be consulted.
    ///
    /// - Parameters:
    ///   - userID: the user the reader asked for: the user id it was given, the file name of a contacts folder's
    ///     `<user id>.card.json`, the user id in a relay's URL.
    ///   - source: where the list came from, for the message (`keys/bob.card.json`, `the relay`).
    /// - Throws: `.userIDMismatch`, naming both user ids.
    public func checkAddressed(to userID: String, source: String) throws(E2EEError) {
        guard self.userID == userID else {
            throw E2EEError(
                .userIDMismatch,
                "\(source) holds \(self.userID)'s device list, not \(userID)'s: it cannot stand for \(userID); get "
                    + "\(userID)'s own card"
            )
        }
    }

    // MARK: well-formedness (§11.1)

    /// Checks a device id: 1-32 bytes of `a-z 0-9 - _ .`.
    public static func checkDeviceID(_ deviceID: String) throws(E2EEError) {
        let bytes = Array(deviceID.utf8)
        let allowed = { (b: UInt8) in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ".")
        }
        guard (1...32).contains(bytes.count), bytes.allSatisfy(allowed) else {
            throw E2EEError.invalidArgument(
                "a device id is 1-32 characters of a-z, 0-9, '-', '_' and '.', got \"\(deviceID.prefix(40))\""
            )
        }
    }

    /// Checks a device's key lifecycle: 1-16 keys, exactly one current key and it is the last, every retired key
    /// expires at or after its retirement, the current key has no expiry.
    static func checkKeyLifecycle(_ keys: [(retired: UInt64?, expires: UInt64?)], device: String) throws(E2EEError) {
        guard (1...16).contains(keys.count) else {
            throw E2EEError(.keyFile, "device \"\(device)\" must have 1-16 device keys, has \(keys.count)")
        }
        for (index, key) in keys.enumerated() {
            let isLast = index == keys.count - 1
            switch (key.retired, key.expires) {
            case (nil, nil) where isLast: continue
            case (nil, _) where isLast:
                throw E2EEError(.keyFile, "device \"\(device)\": the current key must not have expires_at_ms")
            case (nil, _):
                throw E2EEError(
                    .keyFile,
                    "device \"\(device)\": only the last device key may be current (without retired_at_ms)"
                )
            case (.some, _) where isLast:
                throw E2EEError(.keyFile, "device \"\(device)\": the last device key must be current, it is retired")
            case (.some(let retired), .some(let expires)) where expires >= retired: continue
            case (.some, .some):
                throw E2EEError(.keyFile, "device \"\(device)\": a key expires before it was retired")
            case (.some, nil):
                throw E2EEError(.keyFile, "device \"\(device)\": a retired key must have expires_at_ms")
            }
        }
    }

    /// Checks everything §11.1 asks beyond the JSON types.
    func checkWellFormed(signed: Bool = true) throws(E2EEError) {
        // A list being built gets its format when it is signed (``sign(with:nowMs:bumpVersion:)``).
        guard
            !signed || self.formatVersion == DeviceList.suitesFormatVersion
                || DeviceList.formatVersion(for: self.devices) == DeviceList.classicalFormatVersion
        else {
            throw E2EEError(.keyFile, "a device list of version 2 holds classical device keys only (suite 1)")
        }
        guard (1...InnerMessage.maximumUserIDLength).contains(self.userID.utf8.count) else {
            throw E2EEError(.keyFile, "a device list's user_id is 1-64 bytes")
        }
        guard self.displayName.utf8.count <= 255 else {
            throw E2EEError(.keyFile, "a device list's display_name is at most 255 bytes")
        }
        guard (1...DeviceList.maximumInteger).contains(self.listVersion) else {
            throw E2EEError(.keyFile, "list_version must be 1 to 2^53 - 1")
        }
        guard (1...DeviceList.maximumDevices).contains(self.devices.count) else {
            throw E2EEError(.keyFile, "a device list holds 1-16 devices, this one \(self.devices.count)")
        }
        guard !signed || self.signature.count == 64 else {
            throw E2EEError(.keyFile, "signature must be 64 bytes")
        }
        var deviceIDs = Set<String>()
        var signingKeyIDs: Set<KeyID> = [self.userSigningKey.keyID]
        var deviceKeyIDs = Set<KeyID>()
        var times: [UInt64] = [self.issuedAtMs]
        for device in self.devices {
            times.append(device.signedInAtMs)
            for key in device.deviceKeys {
                times += [key.createdAtMs, key.retiredAtMs ?? 0, key.expiresAtMs ?? 0]
            }
        }
        guard times.allSatisfy({ $0 <= DeviceList.maximumInteger }) else {
            throw E2EEError(.keyFile, "a time in the device list is above 2^53 - 1")
        }
        for device in self.devices {
            do {
                try DeviceList.checkDeviceID(device.deviceID)
            } catch {
                throw E2EEError(.keyFile, error.message)
            }
            guard deviceIDs.insert(device.deviceID).inserted else {
                throw E2EEError(.keyFile, "device id \"\(device.deviceID)\" appears twice")
            }
            guard signingKeyIDs.insert(device.signingKey.keyID).inserted else {
                throw E2EEError(.keyFile, "device \"\(device.deviceID)\" reuses a signing key of the list")
            }
            guard device.certificate.count == 64 else {
                throw E2EEError(.keyFile, "device \"\(device.deviceID)\": certificate must be 64 bytes")
            }
            try DeviceList.checkKeyLifecycle(
                device.deviceKeys.map { ($0.retiredAtMs, $0.expiresAtMs) },
                device: device.deviceID
            )
            for key in device.deviceKeys where !deviceKeyIDs.insert(key.keyID).inserted {
                throw E2EEError(.keyFile, "device key \(key.keyID) appears twice in the list")
            }
            if let push = device.push {
                try DeviceList.checkPush(push, device: device.deviceID)
            }
        }
    }

    static func checkPush(_ push: PushAddress, device: String) throws(E2EEError) {
        if let problem = push.problem {
            throw E2EEError(.keyFile, "device \"\(device)\": push: \(problem)")
        }
    }

    // MARK: building and signing (a device holding the user key)

    init(
        userID: String,
        displayName: String,
        userSigningKey: SigningPublicKey,
        listVersion: UInt64,
        issuedAtMs: UInt64,
        devices: [Device],
        signature: [UInt8],
        formatVersion: Int? = nil
    ) {
        self.formatVersion = formatVersion ?? DeviceList.formatVersion(for: devices)
        self.userID = userID
        self.displayName = displayName
        self.userSigningKey = userSigningKey
        self.listVersion = listVersion
        self.issuedAtMs = issuedAtMs
        self.devices = devices
        self.signature = signature
    }

    /// A device entry for `identity`'s own device, signed in at `signedInAtMs` by `userKey`.
    static func signIn(
        userID: String,
        deviceID: String,
        signingKey: SigningPublicKey,
        keys: [DeviceKeyEntry],
        push: PushAddress?,
        userKey: SigningPrivateKey,
        atMs: UInt64
    ) throws(E2EEError) -> Device {
        let certificate = try userKey.signature(
            for: certificateMessage(userID: userID, deviceID: deviceID, signingKey: signingKey, signedInAtMs: atMs)
        )
        return Device(
            deviceID: deviceID,
            signingKey: signingKey,
            signedInAtMs: atMs,
            certificate: certificate,
            deviceKeys: keys,
            push: push
        )
    }

    /// The first list of a user: version 1, `identity`'s device only. `identity` must hold the user key.
    public static func create(for identity: Identity, push: PushAddress?, nowMs: UInt64) throws(E2EEError) -> DeviceList
    {
        guard let userKey = identity.userSigningKey else {
            throw E2EEError.invalidArgument(
                "\(identity.userID)/\(identity.deviceID) does not hold the user key: only a device made with keygen (the user's first device) can sign a device list"
            )
        }
        let device = try signIn(
            userID: identity.userID,
            deviceID: identity.deviceID,
            signingKey: identity.signingKey.publicKey,
            keys: identity.publishedDeviceKeys,
            push: push,
            userKey: userKey,
            atMs: nowMs
        )
        var list = DeviceList(
            userID: identity.userID,
            displayName: identity.displayName,
            userSigningKey: userKey.publicKey,
            listVersion: 1,
            issuedAtMs: nowMs,
            devices: [device],
            signature: []
        )
        try list.sign(with: userKey, nowMs: nowMs, bumpVersion: false)
        return list
    }

    /// The next version of this list with `request`'s device signed in, or, when the list already has that
    /// device (same id and signing key), with its keys (and push address, if the request has one) replaced.
    ///
    /// - Throws: `.invalidArgument` when `signer` does not hold this list's user key, the request is for another
    ///   user, names an existing device with another signing key, or the list is full; the request's own errors.
    public func signingIn(_ request: DeviceRequest, signer: Identity, nowMs: UInt64) throws(E2EEError) -> DeviceList {
        let userKey = try self.userKey(of: signer)
        try request.verify()
        guard request.userID == self.userID else {
            throw E2EEError.invalidArgument(
                "the request is for user \"\(request.userID)\", this list is \(self.userID)'s"
            )
        }
        var next = self
        if let index = next.devices.firstIndex(where: { $0.deviceID == request.deviceID }) {
            guard next.devices[index].signingKey == request.signingKey else {
                throw E2EEError.invalidArgument(
                    "\(self.userID) already has a device \"\(request.deviceID)\" with another signing key: remove it first (device remove), or pick another device id"
                )
            }
            next.devices[index].deviceKeys = request.deviceKeys
            if let push = request.push { next.devices[index].push = push }
        } else {
            guard next.devices.count < DeviceList.maximumDevices else {
                throw E2EEError.invalidArgument("\(self.userID) already has 16 devices: remove one first")
            }
            next.devices.append(
                try DeviceList.signIn(
                    userID: self.userID,
                    deviceID: request.deviceID,
                    signingKey: request.signingKey,
                    keys: request.deviceKeys,
                    push: request.push,
                    userKey: userKey,
                    atMs: nowMs
                )
            )
        }
        try next.checkWellFormed(signed: false)
        try next.sign(with: userKey, nowMs: nowMs, bumpVersion: true)
        return next
    }

    /// The next version of this list with `signer`'s own device keys as they are now (after a rotation).
    public func updatingKeys(
        of signer: Identity,
        push: PushAddress? = nil,
        nowMs: UInt64
    ) throws(E2EEError) -> DeviceList {
        let userKey = try self.userKey(of: signer)
        var next = self
        guard let index = next.devices.firstIndex(where: { $0.signingKey == signer.signingKey.publicKey }) else {
            throw E2EEError.invalidArgument("\(signer.userID)'s device list has no device \"\(signer.deviceID)\"")
        }
        next.devices[index].deviceKeys = signer.publishedDeviceKeys
        if let push { next.devices[index].push = push }
        next.displayName = signer.displayName
        try next.checkWellFormed(signed: false)
        try next.sign(with: userKey, nowMs: nowMs, bumpVersion: true)
        return next
    }

    /// The next version of this list without the device `deviceID` (a lost or retired device).
    ///
    /// - Throws: `.invalidArgument` when the device is unknown, is the signer's own device, or is the last one.
    public func removing(deviceID: String, signer: Identity, nowMs: UInt64) throws(E2EEError) -> DeviceList {
        let userKey = try self.userKey(of: signer)
        guard self.device(named: deviceID) != nil else {
            throw E2EEError.invalidArgument(
                "\(self.userID) has no device \"\(deviceID)\" (devices: \(self.devices.map(\.deviceID).joined(separator: ", ")))"
            )
        }
        guard deviceID != signer.deviceID else {
            throw E2EEError.invalidArgument(
                "\"\(deviceID)\" is the device signing this list: a device cannot remove itself"
            )
        }
        guard self.devices.count > 1 else {
            throw E2EEError.invalidArgument(
                "\"\(deviceID)\" is \(self.userID)'s last device: a device list holds at least one device"
            )
        }
        var next = self
        next.devices.removeAll { $0.deviceID == deviceID }
        try next.sign(with: userKey, nowMs: nowMs, bumpVersion: true)
        return next
    }

    /// This list with `deviceID`'s push address replaced. The push address is not signed, so the list's version
    /// and signature stay as they are.
    public func settingPush(_ push: PushAddress?, deviceID: String) throws(E2EEError) -> DeviceList {
        guard let index = self.devices.firstIndex(where: { $0.deviceID == deviceID }) else {
            throw E2EEError.invalidArgument("\(self.userID) has no device \"\(deviceID)\"")
        }
        if let push { try DeviceList.checkPush(push, device: deviceID) }
        var next = self
        next.devices[index].push = push
        return next
    }

    private func userKey(of signer: Identity) throws(E2EEError) -> SigningPrivateKey {
        guard signer.userID == self.userID, let userKey = signer.userSigningKey,
            userKey.publicKey == self.userSigningKey
        else {
            throw E2EEError.invalidArgument(
                "\(signer.userID)/\(signer.deviceID) does not hold the user key that signs \(self.userID)'s device list: sign on the device made with keygen"
            )
        }
        return userKey
    }

    private mutating func sign(with userKey: SigningPrivateKey, nowMs: UInt64, bumpVersion: Bool) throws(E2EEError) {
        if bumpVersion {
            guard self.listVersion < DeviceList.maximumInteger else {
                throw E2EEError.invalidArgument("the device list's version cannot go higher")
            }
            self.listVersion += 1
        }
        self.issuedAtMs = min(nowMs, DeviceList.maximumInteger)
        self.formatVersion = DeviceList.formatVersion(for: self.devices)
        try self.checkWellFormed(signed: false)
        self.signature = try userKey.signature(for: self.signatureLabel + self.toBeSigned())
    }

    /// A list from its parts, unsigned checks only (test vectors build forged lists with it).
    @_spi(Vectors)
    public static func unchecked(
        userID: String,
        displayName: String,
        userSigningKey: SigningPublicKey,
        listVersion: UInt64,
        issuedAtMs: UInt64,
        devices: [Device],
        signature: [UInt8]
    ) -> DeviceList {
        DeviceList(
            userID: userID,
            displayName: displayName,
            userSigningKey: userSigningKey,
            listVersion: listVersion,
            issuedAtMs: issuedAtMs,
            devices: devices,
            signature: signature
        )
    }

    /// Replaces the devices without re-signing (test vectors: forged lists).
    @_spi(Vectors)
    public func withDevices(_ devices: [Device], listVersion: UInt64? = nil) -> DeviceList {
        var copy = self
        copy.devices = devices
        if let listVersion { copy.listVersion = listVersion }
        return copy
    }

    /// Signs a list with any key (test vectors: a list signed by another user key).
    @_spi(Vectors)
    public static func signedForVectors(
        userID: String,
        displayName: String,
        userKey: SigningPrivateKey,
        listVersion: UInt64,
        issuedAtMs: UInt64,
        devices: [(identity: Identity, signedInAtMs: UInt64, push: PushAddress?)]
    ) throws(E2EEError) -> DeviceList {
        var list = DeviceList(
            userID: userID,
            displayName: displayName,
            userSigningKey: userKey.publicKey,
            listVersion: listVersion,
            issuedAtMs: issuedAtMs,
            devices: try devices.map { (entry) throws(E2EEError) in
                try signIn(
                    userID: userID,
                    deviceID: entry.identity.deviceID,
                    signingKey: entry.identity.signingKey.publicKey,
                    keys: entry.identity.publishedDeviceKeys,
                    push: entry.push,
                    userKey: userKey,
                    atMs: entry.signedInAtMs
                )
            },
            signature: []
        )
        let issued = list.issuedAtMs
        try list.sign(with: userKey, nowMs: issued, bumpVersion: false)
        return list
    }
}
