public import E2EECore
import Foundation

/// Creating a device: a user's first device, which holds the user key (`e2ee-send keygen`), or another device of
/// an existing user with a request to sign it in (`e2ee-send device request`), as functions a test calls
/// in-process (docs/PROTOCOL.md §11.2).
public enum DeviceSetup: Sendable {
    /// What a device's creation wrote.
    public struct Created: Sendable {
        /// The new identity (secret, mode 0600) and where it was written.
        public let identity: Identity
        public let identityPath: String
        /// The public file written next to it: the card (list version 1) of a first device, or the device request.
        public let publicPath: String
        /// A first device's list (nil for a device request).
        public let list: DeviceList?
    }

    /// What both kinds of device are created from.
    public struct Options: Sendable {
        public var userID: String
        public var deviceID: String
        /// The name others see; default: the user id.
        public var displayName: String?
        /// This device's push address, published in the card or request (checked by `PushAddress.problem`, an APNs
        /// token in lower case); nil: none. ``DeviceFiles/push(token:topic:)`` makes an APNs one.
        public var push: PushAddress?
        /// A file holding the passphrase that locks the identity.
        public var passphraseFile: String?
        /// The first device key's crypto suite.
        public var suite: CryptoSuite = .classical
        /// Where `<user id>.identity` and the public file go (created if missing).
        public var folder: String
        /// Replace an existing identity (its keys are lost).
        public var force = false

        public init(userID: String, deviceID: String, folder: String) {
            self.userID = userID
            self.deviceID = deviceID
            self.folder = folder
        }
    }

    /// A user's first device: an identity holding the user key and the signed list, version 1, with this device
    /// only (`<folder>/<user id>.identity` and `<folder>/<user id>.card.json`).
    ///
    /// - Throws: `.usage` for an existing identity without ``Options/force`` or a bad user or device id,
    ///   `.badDeviceToken`, a passphrase file's error,
    ///   `.cannotCreate` for a folder or card that cannot be written, E2EECore's codes for an identity that
    ///   cannot be saved.
    public static func createUser(_ options: Options, nowMs: UInt64) throws(SenderError) -> Created {
        try self.create(options, withUserKey: true, nowMs: nowMs) { identity, push throws(E2EEError) in
            let list = try DeviceList.create(for: identity, push: push, nowMs: nowMs)
            return (list.jsonData(), options.userID + ".card.json", list)
        }
    }

    /// Another device of an existing user: an identity without the user key and a request to sign it in
    /// (`<folder>/<user id>.identity` and `<folder>/<user id>.<device id>.request.json`), to carry to the device
    /// holding the user key (`e2ee-send device add --request FILE`).
    ///
    /// - Throws: as ``createUser(_:nowMs:)``.
    public static func createDevice(_ options: Options, nowMs: UInt64) throws(SenderError) -> Created {
        try self.create(options, withUserKey: false, nowMs: nowMs) { identity, push throws(E2EEError) in
            let request = try DeviceRequest.make(for: identity, push: push, nowMs: nowMs)
            return (request.jsonData(), "\(options.userID).\(options.deviceID).request.json", nil)
        }
    }

    /// Checks, generates, then writes: the folder, the identity, and the public file `publicFile` makes.
    private static func create(
        _ options: Options,
        withUserKey: Bool,
        nowMs: UInt64,
        publicFile: (Identity, PushAddress?) throws(E2EEError) -> (bytes: [UInt8], name: String, list: DeviceList?)
    ) throws(SenderError) -> Created {
        let identityPath = try self.identityPath(options)
        var push: PushAddress?
        if let given = options.push { push = try DeviceFiles.checked(given, naming: "the push address") }
        let passphrase = try DeviceFiles.passphrase(file: options.passphraseFile)
        let identity = try self.generate(options, withUserKey: withUserKey, nowMs: nowMs)
        let file: (bytes: [UInt8], name: String, list: DeviceList?)
        do throws(E2EEError) {
            file = try publicFile(identity, push)
        } catch {
            throw SenderError(error, context: "e2ee-send")
        }
        try DeviceFiles.createFolder(options.folder)
        try self.save(identity, to: identityPath, passphrase: passphrase)
        let path = options.folder + "/" + file.name
        try DeviceFiles.writePublic(file.bytes, to: path)
        return Created(identity: identity, identityPath: identityPath, publicPath: path, list: file.list)
    }

    private static func identityPath(_ options: Options) throws(SenderError) -> String {
        let path = options.folder + "/" + options.userID + ".identity"
        if !options.force && FileManager.default.fileExists(atPath: path) {
            throw SenderError(.usage, "\(path) exists; pass --force to replace it (the old keys are lost)")
        }
        return path
    }

    private static func generate(_ options: Options, withUserKey: Bool, nowMs: UInt64) throws(SenderError) -> Identity {
        do {
            return try Identity.generate(
                userID: options.userID,
                displayName: options.displayName ?? options.userID,
                deviceID: options.deviceID,
                withUserKey: withUserKey,
                suite: options.suite,
                nowMs: nowMs
            )
        } catch {
            throw SenderError(error, context: "e2ee-send")
        }
    }

    private static func save(_ identity: Identity, to path: String, passphrase: SecureBytes?) throws(SenderError) {
        do {
            try identity.save(path: path, passphrase: passphrase)
        } catch {
            throw SenderError(error, context: "e2ee-send")
        }
    }
}
