import APNsCommandLine
import ArgumentParser
import E2EECore
import Foundation
import RelayClient
import Sender

/// `e2ee-send relay publish|register|tokens`: what a device does at the relay (docs/RELAY.md).
struct RelayCommands: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Publish your device list, register this device's push address, set your delivery tokens.",
        discussion: """
            These talk to the relay (--relay https://host:port, --relay-ca for a loopback CA). Each prints one \
            JSON line with the relay's answer. A refusal names the relay's reason code and what to do, and exits \
            69 (relay-refused); 75 when the relay cannot be reached or did not answer (relay-unavailable: nothing \
            changed, run again); 78 when its certificate does not verify against --relay-ca (untrusted-certificate). \
            Each subcommand's --help lists its own.
            \(E2EESend.exitCodes)
            """,
        subcommands: [RelayPublish.self, RelayRegister.self, RelayTokens.self]
    )
}

/// `--relay` of `e2ee-send relay …`: the relay this device talks to (required here; for sending, `--relay` is
/// ``RelayOptions``, optional).
struct RelayServerOptions: ParsableArguments {
    @Option(name: .long, help: "The relay to talk to (https://host:port, e2ee-relay serve).")
    var relay: String

    @OptionGroup var connection: RelayConnectionOptions

    func makeClient() throws(SenderError) -> RelayClient {
        try self.connection.client(url: self.relay)
    }
}

/// Runs one relay request with a client that is always shut down; relay errors become sender errors that say
/// what to do for this request.
func withRelay(
    _ options: RelayServerOptions,
    request: RelayRequest,
    userID: String,
    _ body: (RelayClient) async throws(RelayError) -> String
) async throws(SenderError) {
    let client = try options.makeClient()
    let line: String
    do throws(RelayError) {
        line = try await body(client)
    } catch {
        await client.shutdown()
        throw request.error(error, userID: userID)
    }
    await client.shutdown()
    try printLine(line)
}

struct RelayPublish: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish a user's signed device list (a card file) to the relay.",
        discussion: """
            The relay checks the list's signatures and pins its user key per user id (a list under another user \
            key is refused: signing-key-changed); a lower version is refused (list-rollback). Prints \
            {"list_version":N,"stored":true|false} (false: the identical list was already stored).
            Exit codes: 0 stored (or already stored); 65 no card, or not a well-formed device list \
            (malformed-list); 69 the relay refused (its reason code is named, with what to do); 75 the relay \
            cannot be reached (nothing changed: run again); 76 the card does not verify (device-not-signed-in, \
            bad-list-signature).
            """
    )
    @OptionGroup var relay: RelayServerOptions
    @Option(name: .long, help: "The signed device list: the card file written by keygen, rotate, device add|remove.")
    var card: String

    func run() async throws {
        try await runCLI {
            let list: DeviceList
            do throws(SenderError) {
                list = try DeviceFiles.loadOwnList(self.card)
            } catch {
                throw SenderError(error.code, "cannot publish \(self.card): \(error.message)")
            }
            try await withRelay(self.relay, request: .publish, userID: list.userID) {
                (client) async throws(RelayError) -> String in
                let answer = try await client.publish(list)
                return #"{"list_version":\#(answer.listVersion),"stored":\#(answer.stored)}"#
            }
        }
    }
}

struct RelayRegister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Register this device's push address with the relay (signed by the device key).",
        discussion: """
            The device must be in the user's list at the relay (relay publish first). Registering again replaces \
            the address (a new token from APNs). The address is --device-token with --topic (APNs), or \
            --push-address <service>:<address> for any service the relay delivers through. --environment is the \
            APNs environment the app build's token belongs to: development (the default) for builds run from Xcode, \
            production for TestFlight and the App Store; other services have none. Prints \
            {"device":"<id>","push":"active"}.
            Exit codes: 0 registered; 64 usage (a bad device token or address); 66 no identity file; 69 the relay \
            refused (its reason code is named: unknown-user or unknown-device means publish the list that signs this \
            device in first); 75 the relay cannot be reached (nothing changed: run again); 77 the identity file is \
            readable by others.
            """
    )
    @OptionGroup var identity: IdentityOptions
    @OptionGroup var relay: RelayServerOptions
    @OptionGroup var push: PushAddressOptions
    @Option(name: .long, help: "The APNs environment the token belongs to (APNs addresses only). Default development.")
    var environment: APNsEnvironment?

    func run() async throws {
        try await runCLI {
            let id = try self.identity.load()
            guard let push = try self.push.address() else {
                throw SenderError(.usage, "give --device-token (with --topic), or --push-address <service>:<address>")
            }
            let address: RegisteredAddress
            if push.service == .apns {
                address = RegisteredAddress(push: push, environment: (self.environment ?? .development).rawValue)
            } else if self.environment != nil {
                throw SenderError(.usage, "--environment is for APNs addresses; \(push.service) has none")
            } else {
                address = RegisteredAddress(push: push, environment: nil)
            }
            try await withRelay(self.relay, request: .register, userID: id.userID) {
                (client) async throws(RelayError) -> String in
                try await client.registerPush(
                    userID: id.userID,
                    deviceID: id.deviceID,
                    address: address,
                    signingKey: id.signingKey
                )
                return #"{"device":"\#(id.deviceID)","push":"active"}"#
            }
        }
    }
}

struct RelayTokens: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens",
        abstract: "Set the delivery tokens your contacts submit with (replaces the set; signed by this device).",
        discussion: """
            Each --token-file holds one delivery token (64 hex digits, mode 0600); without --token-file the file is \
            <user id>.delivery-token next to the identity, which is also where e2ee-send looks for your own user's \
            token when you message your own devices (an answer's cancel). With --create, a missing file gets a new \
            random token. The relay stores only each token's SHA-256. Hand a token to a contact (and to your other \
            devices) inside the encrypted channel or out of band; they save it as <contacts>/<your user \
            id>.delivery-token (your other devices: next to their identity). To rotate, set the new and the old \
            token, then only the new one. --close sets no token at all, which closes you to every sender (your own \
            devices included) until you set one again. Prints {"tokens":N}.
            Exit codes: 0 set; 64 usage (--close with --token-file, a token file that does not hold a token); 66 no \
            identity or token file; 69 the relay refused (its reason code is named); 73 a new token file cannot be \
            written; 75 the relay cannot be reached (nothing changed: run again); 77 a token or identity file is \
            readable by others.
            """
    )
    @OptionGroup var identity: IdentityOptions
    @OptionGroup var relay: RelayServerOptions
    @Option(
        name: .long,
        help: "A delivery token file (repeatable). Default: <user id>.delivery-token next to the identity."
    ) var tokenFile: [String] = []
    @Flag(name: .long, help: "Write a new random token to each token file that does not exist.") var create = false
    @Flag(name: .long, help: "Set no token: close this user to every sender (explicitly; nothing else does).")
    var close = false

    func validate() throws {
        if self.close && (!self.tokenFile.isEmpty || self.create) {
            throw ValidationError(
                "--close sets an empty token set; it does not go with --token-file or --create (leave them out)"
            )
        }
    }

    func run() async throws {
        try await runCLI {
            let id = try self.identity.load()
            var tokens: [DeliveryToken] = []
            let files =
                self.close
                ? []
                : self.tokenFile.isEmpty
                    ? [try self.identity.siblingFile(userID: id.userID, suffix: ".delivery-token")] : self.tokenFile
            for path in files {
                if self.create && !FileManager.default.fileExists(atPath: path) {
                    tokens.append(try DeliveryTokenFile.create(path: path))
                    note("e2ee-send: wrote a new delivery token to \(path) (mode 0600): hand it to your contacts")
                } else {
                    tokens.append(try DeliveryTokenFile.read(path: path, userID: id.userID))
                }
            }
            if self.close {
                note("e2ee-send: closing \(id.userID) to every sender: no delivery token is set")
            }
            try await withRelay(self.relay, request: .tokens, userID: id.userID) {
                (client) async throws(RelayError) -> String in
                let count = try await client.setDeliveryTokens(
                    userID: id.userID,
                    deviceID: id.deviceID,
                    tokens: tokens,
                    signingKey: id.signingKey
                )
                return #"{"tokens":\#(count)}"#
            }
        }
    }
}
