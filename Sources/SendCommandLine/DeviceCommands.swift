import ArgumentParser
import E2EECore
import Foundation
import Sender

/// `e2ee-send device …`: a user's devices (docs/PROTOCOL.md §11).
struct Device: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sign a user's devices in and out of the device list, and show it.",
        discussion: """
            A new device runs `device request`; the device holding the user key (made by keygen) runs \
            `device add --request FILE` and publishes the list it writes. `device remove` takes a lost device out: \
            from the next send on, it gets nothing.
            \(E2EESend.exitCodes)
            """,
        subcommands: [DeviceRequestCommand.self, DeviceAdd.self, DeviceRemove.self, DeviceListCommand.self]
    )
}

struct DeviceRequestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Create a new device of an existing user: its identity (no user key) and a request to sign it in.",
        discussion: """
            Writes <out-dir>/<user id>.identity (secret, 0600) and <out-dir>/<user id>.<device id>.request.json \
            (public), and prints the request path. Carry the request to the managing device and run \
            `e2ee-send device add --request FILE` there.
            \(E2EESend.exitCodes)
            """
    )
    @Option(name: .long, help: "The user id of the user this device belongs to.") var userID: String
    @Option(name: .long, help: "This device's id (1-32 of a-z 0-9 - _ .), unique for the user.") var deviceID: String
    @Option(name: .long, help: "Where to write the identity and the request.") var outDir: String
    @OptionGroup var device: NewDeviceOptions

    func run() async throws {
        try await runCLI {
            let created = try DeviceSetup.createDevice(
                try self.device.setup(userID: self.userID, deviceID: self.deviceID, folder: self.outDir),
                nowMs: WallClock.system.unsignedMs
            )
            note(
                "wrote \(created.identityPath) (secret, mode 0600) and \(created.publicPath) (public): sign it in on the "
                    + "managing device with e2ee-send device add --request \(created.publicPath)"
            )
            try printLine(created.publicPath)
        }
    }
}

/// The managing device's identity and the user's current list, shared by `device add` and `device remove`.
struct ManagedListOptions: ParsableArguments {
    @OptionGroup var identity: IdentityOptions
    @Option(name: .long, help: "The user's current device list (written back unless --card-out).") var card: String
    @Option(name: .long, help: "Write the new list here instead of back to --card.") var cardOut: String?

    /// Loads both, changes the list, writes it and prints it.
    func update(
        _ change: (Identity, DeviceList, UInt64) throws(SenderError) -> DeviceList
    ) throws(SenderError)
        -> DeviceList
    {
        let id = try self.identity.load()
        let list = try DeviceFiles.loadOwnList(self.card)
        let next = try change(id, list, WallClock.system.unsignedMs)
        try writeAndPrint(next, to: self.cardOut ?? self.card)
        return next
    }
}

struct DeviceAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Sign a device in (or take an existing device's new keys), on the device holding the user key.",
        discussion: "\(E2EESend.exitCodes)"
    )
    @OptionGroup var managed: ManagedListOptions
    @Option(name: .long, help: "The device request file (from device request, or rotate on that device).")
    var request: String

    func run() async throws {
        try await runCLI {
            let request = try Self.loadRequest(self.request)
            let next = try self.managed.update { id, list, now throws(SenderError) in
                try DeviceManagement.add(request, to: list, signer: id, nowMs: now)
            }
            note(
                "signed in \(next.userID)/\(request.deviceID) (list version \(next.listVersion)); wrote "
                    + "\(self.managed.cardOut ?? self.managed.card): publish it"
            )
        }
    }

    static func loadRequest(_ path: String) throws(SenderError) -> DeviceRequest {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SenderError(.unknownRecipient, "cannot read the device request \(path): check the path")
        }
        do {
            return try DeviceRequest.parse(Array(data))
        } catch {
            throw SenderError(.badRequest, "refused the device request \(path): \(error.message)")
        }
    }
}

struct DeviceRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Sign a device out (a lost phone): from the next send on, it gets nothing.",
        discussion: "\(E2EESend.exitCodes)"
    )
    @OptionGroup var managed: ManagedListOptions
    @Option(name: .long, help: "The device to remove.") var deviceID: String

    func run() async throws {
        try await runCLI {
            let next = try self.managed.update { id, list, now throws(SenderError) in
                try DeviceManagement.remove(deviceID: self.deviceID, from: list, signer: id, nowMs: now)
            }
            note(
                "removed \(next.userID)/\(self.deviceID) (list version \(next.listVersion)); wrote "
                    + "\(self.managed.cardOut ?? self.managed.card): publish it"
            )
        }
    }
}

struct DeviceListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Show a device list: user, fingerprint, version, and each device.",
        discussion: "\(E2EESend.exitCodes)",
        aliases: ["ls"]
    )
    @Option(name: .long, help: "The device list (a card file).") var card: String

    func run() async throws {
        try await runCLI {
            let list = try DeviceFiles.loadOwnList(self.card)
            for line in DeviceManagement.describe(list) { try printLine(line) }
        }
    }
}

/// `e2ee-send contact …`: the sender's trust in a contact's user key (docs/PROTOCOL.md §11.5).
struct Contact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch a contact's current card from the relay, show its fingerprint and pin, accept a new key.",
        discussion: "\(E2EESend.exitCodes)",
        subcommands: [ContactFetch.self, ContactAccept.self, ContactShow.self]
    )
}

/// `e2ee-send contact fetch`: a user's current list from the relay into the contacts folder, checked as a send
/// checks it (docs/PROTOCOL.md §11.4, §11.5).
struct ContactFetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch a user's current device list from the relay into the contacts folder (<user id>.card.json).",
        discussion: """
            The list is verified and checked against your pins exactly as a send checks it (first use pins its \
            user key and prints the fingerprint; another key, an older version or a reused one is refused and \
            nothing is written), then written to <contacts>/<user id>.card.json unless the card there is as new. \
            Sends through the relay keep that card in step too, so a later offline or --deliver send uses the list \
            the pins moved to. Prints {"card":"<path>","list_version":N,"user":"<user id>","written":true|false}.
            Exit codes: 0 fetched; 64 usage; 65 the relay has no list of that user, or the list is not well formed \
            (malformed-list); 66 no identity file; 69 the relay refused; 73 the card or pins file cannot be \
            written; 75 the relay cannot be reached (run again); 76 the list was refused (signing-key-changed, \
            list-rollback, list-version-reused, device-not-signed-in, bad-list-signature, user-id-mismatch).
            """
    )
    @Option(name: .long, help: "The user whose list to fetch.") var to: String
    @Option(name: .long, help: "The contacts folder the card is written to, as <user id>.card.json.") var contacts:
        String
    @OptionGroup var pins: PinsOptions
    @Option(name: .long, help: "Your identity file; the default pins file is pins.json next to it.") var identity:
        String?
    @OptionGroup var relay: RelayServerOptions

    func run() async throws {
        try await runCLI {
            let identityPath = self.identity ?? ProcessInfo.processInfo.environment["E2EE_IDENTITY_FILE"]
            var trust = try self.pins.trust(identityPath: identityPath, contacts: self.contacts)
            let path = self.contacts + "/" + self.to + ".card.json"
            let before = try? DeviceList.load(path: path)
            let client = try self.relay.makeClient()
            let list: DeviceList
            do throws(SenderError) {
                list = try await trust.list(for: self.to) { () async throws(SenderError) -> DeviceList in
                    try await RelaySender.fetch(client, userID: self.to).list
                }
            } catch {
                await client.shutdown()
                throw error
            }
            await client.shutdown()
            let written = before.map { $0.listVersion < list.listVersion || $0.userID != list.userID } ?? true
            try printLine(
                FetchedCard(card: path, listVersion: list.listVersion, user: list.userID, written: written).line
            )
        }
    }

    /// The line `contact fetch` prints.
    struct FetchedCard: Encodable {
        var card: String
        var listVersion: UInt64
        var user: String
        var written: Bool

        enum CodingKeys: String, CodingKey {
            case card, user, written
            case listVersion = "list_version"
        }

        var line: String { JSONLine.encode(self) }
    }
}

/// The pins file of `contact …`: `--pins`, `$E2EE_PINS_FILE`, or next to `--identity`.
struct ContactPinsOptions: ParsableArguments {
    @Option(name: .long, help: "The contact's device list (a card file).") var card: String
    @OptionGroup var pins: PinsOptions
    @Option(name: .long, help: "Your identity file; the default pins file is pins.json next to it.") var identity:
        String?

    func trust() throws(SenderError) -> ContactTrust {
        let identity = self.identity ?? ProcessInfo.processInfo.environment["E2EE_IDENTITY_FILE"]
        return try ContactTrust(
            directory: ContactDirectory(folder: nil),
            pinsPath: self.pins.path(identityPath: identity)
        )
    }

    func list() throws(SenderError) -> DeviceList {
        try ContactDirectory(folder: nil).card(for: self.card)
    }
}

struct ContactAccept: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept",
        abstract: "Trust a contact's new user key after comparing its fingerprint with them.",
        discussion: """
            Use it after a send was refused with signing-key-changed (exit 76), once you compared the new \
            fingerprint with the contact in person or on a call you trust. Prints the old and new fingerprints.
            \(E2EESend.exitCodes)
            """
    )
    @OptionGroup var options: ContactPinsOptions

    func run() async throws {
        try await runCLI {
            var trust = try self.options.trust()
            let list = try self.options.list()
            let previous = try trust.accept(list)
            let new = list.fingerprint
            switch previous {
            case nil:
                note("pinned \(list.userID): fingerprint \(new) (not pinned before)")
            case let old? where old == new:
                note(
                    "\(list.userID)'s user key is unchanged: fingerprint \(new); pinned list version \(list.listVersion)"
                )
            case let old?:
                note("accepted \(list.userID)'s new user key: old fingerprint \(old), new fingerprint \(new)")
            }
            try printLine("\(list.userID) \(new)")
        }
    }
}

struct ContactShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print a contact's fingerprint and whether it matches your pin (nothing is changed).",
        discussion: "\(E2EESend.exitCodes)"
    )
    @OptionGroup var options: ContactPinsOptions

    func run() async throws {
        try await runCLI {
            let trust = try self.options.trust()
            let list = try self.options.list()
            try printLine("user \(list.userID)")
            try printLine("fingerprint \(list.fingerprint)")
            try printLine("list version \(list.listVersion), issued \(DeviceManagement.utc(list.issuedAtMs))")
            guard let pin = trust.pins.pins[list.userID] else {
                try printLine("pin: none (the first send pins this key)")
                return
            }
            let pinned = DeviceList.fingerprint(userID: list.userID, userSigningKey: pin.userSigningKey)
            let state = pinned == list.fingerprint ? "matches" : "DIFFERS: pinned \(pinned)"
            try printLine("pin: \(state), pinned version \(pin.listVersion)")
        }
    }
}
