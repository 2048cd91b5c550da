import ArgumentParser
import E2EECore
import Foundation
import Sender

struct Keygen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a user's first device: an identity holding the user key (secret, 0600) and the list v1.",
        discussion: """
            Writes <out-dir>/<user id>.identity and <out-dir>/<user id>.card.json (the signed device list, version \
            1, with this device only). This device holds the user key: it signs other devices in (device add) and \
            out (device remove). For a second device of the same user, run `e2ee-send device request` on it.
            \(E2EESend.exitCodes)
            """
    )

    @Option(name: .long, help: "The user id (1-64 bytes).") var userID: String
    @Option(name: .long, help: "This device's id (1-32 of a-z 0-9 - _ .).") var deviceID: String =
        Identity.defaultDeviceID
    @Option(name: .long, help: "Where to write <user id>.identity and <user id>.card.json.") var outDir: String
    @OptionGroup var device: NewDeviceOptions
    @Option(
        name: .long,
        help: "The device key's crypto suite (PROTOCOL.md §16.4; xwing is post-quantum)."
    ) var suite = SuiteName(.classical)

    func run() async throws {
        try await runCLI {
            var options = try self.device.setup(userID: self.userID, deviceID: self.deviceID, folder: self.outDir)
            options.suite = self.suite.suite
            let created = try DeviceSetup.createUser(options, nowMs: WallClock.system.unsignedMs)
            note("wrote \(created.identityPath) (secret, mode 0600) and \(created.publicPath) (public)")
            if let list = created.list {
                note(
                    "\(self.userID)'s fingerprint: \(list.fingerprint) (contacts compare it when they first send to you)"
                )
            }
            try printLine(created.publicPath)
        }
    }
}

/// What `keygen` and `device request` create a device with, besides its user id, device id and folder.
struct NewDeviceOptions: ParsableArguments {
    @Option(name: .long, help: "The name others see.") var displayName: String?
    @OptionGroup var push: PushAddressOptions
    @Option(name: .long, help: "Lock the identity with the passphrase in this file.") var passphraseFile: String?
    @Flag(name: .long, help: "Overwrite an existing identity.") var force = false

    func setup(userID: String, deviceID: String, folder: String) throws(SenderError) -> DeviceSetup.Options {
        var options = DeviceSetup.Options(userID: userID, deviceID: deviceID, folder: folder)
        options.displayName = self.displayName
        options.force = self.force
        options.push = try self.push.address()
        options.passphraseFile = self.passphraseFile
        return options
    }
}

extension IdentityOptions {
    /// The identity file, or the error naming the flag.
    func requiredPath() throws(SenderError) -> String {
        guard let path = self.identityPath else {
            throw SenderError(.missingKey, "no identity: pass --identity FILE or set E2EE_IDENTITY_FILE")
        }
        return path
    }

    /// `<user id>.card.json` next to the identity file, as keygen writes it.
    func siblingCard(userID: String) throws(SenderError) -> String {
        try self.siblingFile(userID: userID, suffix: ".card.json")
    }

    /// `<user id><suffix>` next to the identity file (the card keygen writes, the delivery token `relay tokens`
    /// writes by default).
    func siblingFile(userID: String, suffix: String) throws(SenderError) -> String {
        DeviceFiles.sibling(of: try self.requiredPath(), userID: userID, suffix: suffix)
    }
}

/// Writes a list (public, atomically) and prints it on stdout.
func writeAndPrint(_ list: DeviceList, to path: String) throws(SenderError) {
    try DeviceFiles.writePublic(list.jsonData(), to: path)
    try printBytes(list.jsonData())
}

struct Card: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print your current device list; --device-token or --push-address sets this device's address.",
        discussion: """
            The list is the one --card names (default: <user id>.card.json next to the identity), verified and \
            printed as it is. With --device-token (or --push-address), this device's push address is set and the \
            list is written back to --card (or --card-out): the push address is not signed, so the version and \
            signature stay, and any device can do it. Publish the printed list where your contacts fetch it.
            \(E2EESend.exitCodes)
            """
    )
    @OptionGroup var identity: IdentityOptions
    @Option(name: .long, help: "Your current list. Default: <user id>.card.json next to the identity.") var card:
        String?
    @Option(name: .long, help: "Write the list here instead of back to --card.") var cardOut: String?
    @OptionGroup var push: PushAddressOptions

    func run() async throws {
        try await runCLI {
            let id = try self.identity.load()
            let path = try self.card ?? self.identity.siblingCard(userID: id.userID)
            let list = try DeviceFiles.loadOwnList(path)
            guard list.userID == id.userID, list.device(signingKeyID: id.signingKey.publicKey.keyID) != nil else {
                throw SenderError(
                    .usage,
                    "\(path) is not a list holding this device (\(id.userID)/\(id.deviceID)): pass --card with your "
                        + "user's current list (a new device appears in it after `device add` on the managing device)"
                )
            }
            guard let push = try self.push.address() else {
                if let out = self.cardOut {
                    try writeAndPrint(list, to: out)
                } else {
                    try printBytes(list.jsonData())
                }
                return
            }
            let updated: DeviceList
            do throws(E2EEError) {
                updated = try list.settingPush(push, deviceID: id.deviceID)
            } catch {
                throw SenderError(error, context: "cannot set the push address")
            }
            try writeAndPrint(updated, to: self.cardOut ?? path)
            note("set the push address of \(id.deviceID) (version \(updated.listVersion) unchanged); publish the list")
        }
    }
}

struct Rotate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add a new device key; the old key opens pushes for the grace period, then nothing.",
        discussion: """
            On the device holding the user key: re-signs the list (version + 1; the old key gets retired_at_ms and \
            expires_at_ms = now + grace), writes it back to --card (or --card-out) and prints it. On any other \
            device: writes a device request with the new keys (--request-out, default \
            <user id>.<device id>.request.json next to the identity) and prints it; sign it in on the managing \
            device with `e2ee-send device add --request FILE`. --grace-hours 0 revokes the old key at once (after a \
            key compromise).
            \(E2EESend.exitCodes)
            """
    )
    @OptionGroup var identity: IdentityOptions
    @Option(
        name: .long,
        help: """
            The current list, whose devices and push addresses the new one keeps. Default: --card-out if it \
            exists, else <user id>.card.json next to the identity, as keygen writes it.
            """
    ) var card: String?
    @Option(name: .long, help: "Write the new list here instead of back to --card.") var cardOut: String?
    @Option(name: .long, help: "Where a device without the user key writes its request.") var requestOut: String?
    @Option(name: .long, help: "Hours the previous key keeps opening pushes; 0 revokes it now.") var graceHours: Int =
        168
    @Option(
        name: .long,
        help:
            "The new key's crypto suite (PROTOCOL.md §16.4); default: the current key's. Moving to xwing is a rotation."
    ) var suite: SuiteName?

    func validate() throws {
        guard (0...100_000).contains(self.graceHours) else {
            throw ValidationError("--grace-hours must be 0-100000, got \(self.graceHours)")
        }
    }

    func run() async throws {
        try await runCLI {
            let id = try self.identity.load()
            let identityPath = try self.identity.requiredPath()
            let current = try self.currentCard(userID: id.userID)
            let rotation = try DeviceManagement.rotate(
                id,
                list: current?.list,
                nowMs: WallClock.system.unsignedMs,
                graceMs: UInt64(self.graceHours) * 3_600_000,
                suite: self.suite?.suite
            )
            // The list or request first: if it cannot be written, the identity is unchanged and nothing is lost.
            if let list = rotation.list {
                let out = try self.cardOut ?? current?.path ?? self.identity.siblingCard(userID: id.userID)
                try DeviceFiles.writePublic(list.jsonData(), to: out)
                try rotation.identity.save(path: identityPath, passphrase: try self.identity.passphrase())
                note(
                    "\(rotation.message); wrote the new key to \(identityPath) (a running e2ee-filter on it takes it "
                        + "before its next push) and list version \(list.listVersion) to \(out): publish it (e2ee-send "
                        + "relay publish --card \(out)) so senders seal to the new key"
                )
                if !list.devices.contains(where: { $0.push != nil }) {
                    note("e2ee-send: warning: the list has no push address; set one with e2ee-send card --device-token")
                }
                try printBytes(list.jsonData())
            } else if let request = rotation.request {
                let out =
                    self.requestOut
                    ?? DeviceFiles.sibling(of: identityPath, userID: id.userID, suffix: ".\(id.deviceID).request.json")
                try DeviceFiles.writePublic(request.jsonData(), to: out)
                try rotation.identity.save(path: identityPath, passphrase: try self.identity.passphrase())
                note(
                    "\(rotation.message); wrote the new key to \(identityPath) (a running e2ee-filter on it takes it "
                        + "before its next push); the request is \(out)"
                )
                try printBytes(request.jsonData())
            }
        }
    }

    /// The list whose devices the rotated list keeps: `--card`, else `--card-out` if it exists, else the list
    /// keygen wrote next to the identity. A named `--card` that cannot be read is an error; a default that does
    /// not exist is not.
    func currentCard(userID: String) throws(SenderError) -> (list: DeviceList, path: String)? {
        if let path = self.card { return (try DeviceFiles.loadOwnList(path), path) }
        let sibling = try self.identity.siblingCard(userID: userID)
        for path in [self.cardOut, sibling].compactMap({ $0 }) where FileManager.default.fileExists(atPath: path) {
            return (try DeviceFiles.loadOwnList(path), path)
        }
        return nil
    }
}
