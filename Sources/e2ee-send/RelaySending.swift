import ArgumentParser
import E2EECore
import Foundation
import RelayClient
import Sender

/// `--relay URL` (and `--relay-ca`, `--delivery-token-file`): send through the app's push server instead of holding
/// an APNs key (docs/RELAY.md "Client").
struct RelayOptions: ParsableArguments {
    @Option(
        name: .long,
        help: """
            Send through this relay (https://host:port, e2ee-relay): fetch the recipient's device list from it, seal \
            one envelope per device and submit them with the recipient's delivery token. No APNs key is needed.
            """
    )
    var relay: String?

    @Option(name: .long, help: "A PEM CA file to trust for --relay (e.g. a loopback relay's tls/ca.pem).")
    var relayCA: String?

    @Option(name: .long, help: "With --relay: the most one request to the relay may take, in seconds (1-3600).")
    var relayTimeout: Int = 30

    func validate() throws {
        guard (1...3600).contains(self.relayTimeout) else {
            throw ValidationError("--relay-timeout must be 1-3600 seconds, got \(self.relayTimeout)")
        }
    }

    /// Connects to `--relay`. A request may take 30 s by default (a submit includes the relay's durable commit; slow
    /// links and loaded servers are normal for a phone's app): longer than RelayClient's 10 s default.
    func makeClient() throws(SenderError) -> RelayClient? {
        guard let url = self.relay else { return nil }
        do {
            return try RelayClient(
                baseURL: url,
                trustedCAPEMPath: self.relayCA,
                timeout: .seconds(self.relayTimeout)
            )
        } catch {
            throw SenderError(.usage, "--relay/--relay-ca: \(error.message)")
        }
    }
}

/// Where a recipient's delivery token is read from: `--delivery-token-file`, else `<contacts>/<user id>.delivery-token`.
struct DeliveryTokenOptions: ParsableArguments {
    @Option(
        name: .long,
        help: """
            With --relay: the file holding the recipient's delivery token (64 hex digits, mode 0600), as the \
            recipient handed it over. Default: <contacts>/<user id>.delivery-token.
            """
    )
    var deliveryTokenFile: String?
}

/// Reads delivery tokens: secret files of 64 hex digits (one trailing newline allowed), private to their owner.
enum DeliveryTokenFile {
    static func path(for userID: String, file: String?, contacts: String?) throws(SenderError) -> String {
        if let file { return file }
        guard let contacts else {
            throw SenderError(
                .missingKey,
                "no delivery token for \(userID): pass --delivery-token-file FILE, or --contacts DIR holding "
                    + "\(userID).delivery-token (the token \(userID) handed you, mode 0600)"
            )
        }
        return contacts + "/" + userID + ".delivery-token"
    }

    static func read(path: String, userID: String) throws(SenderError) -> DeliveryToken {
        let text: String
        do throws(E2EEError) {
            let bytes = try SecretFile.readPassphrase(path: path)
            text = bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        } catch {
            if error.code == .insecureFile { throw SenderError(.insecureKey, error.message) }
            throw SenderError(
                .missingKey,
                "no delivery token for \(userID) in \(path): save the token \(userID) handed you there (64 hex "
                    + "digits, mode 0600)"
            )
        }
        guard let token = DeliveryToken(hex: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw SenderError(.usage, "\(path) does not hold a delivery token (64 hex digits)")
        }
        return token
    }

    /// Writes a new random token to `path` (mode 0600) and returns it.
    static func create(path: String) throws(SenderError) -> DeliveryToken {
        let token = DeliveryToken()
        do {
            try SecretFile.write(path: path, bytes: SecureBytes(copying: Array((token.hex + "\n").utf8)))
        } catch {
            throw SenderError(.cannotCreate, "cannot write the delivery token file \(path): \(error.message)")
        }
        return token
    }
}

/// Sends messages through a relay: fetches and pins each recipient's list once per run, seals one envelope per
/// deliverable device, submits them in one request, and turns the relay's answer into result lines.
struct RelaySender {
    let client: RelayClient
    let builder: PushBuilder
    var trust: ContactTrust
    let contacts: String?
    let tokenFile: String?
    /// Each fetched user's push states (device id → state), from the fetch that was pinned.
    private var states: [String: [String: RelayAPI.PushState]] = [:]

    init(client: RelayClient, builder: PushBuilder, trust: ContactTrust, contacts: String?, tokenFile: String?) {
        self.client = client
        self.builder = builder
        self.trust = trust
        self.contacts = contacts
        self.tokenFile = tokenFile
    }

    /// One message to `to`: one result line per device of the recipient's list (the sender's own device aside).
    ///
    /// - Throws: what refuses the whole recipient (unknown user, a list refusal, no delivery token, no device to
    ///   send to): nothing was submitted.
    mutating func send(
        _ content: MessageContent,
        to: String,
        messageID: MessageID,
        sentAtMs: UInt64?,
        line: Int
    ) async throws(SenderError) -> [SendResultLine] {
        let list: DeviceList
        var states: [String: RelayAPI.PushState]? = nil
        if to.hasSuffix(".json") {
            // A card file: its list, under the same pins; the relay refuses a device it cannot deliver to.
            list = try self.trust.list(for: to)
        } else {
            let client = self.client
            var fetched: [String: RelayAPI.PushState] = [:]
            list = try await self.trust.list(for: to) { () async throws(SenderError) -> DeviceList in
                let answer = try await Self.fetch(client, userID: to)
                fetched = Dictionary(answer.devices.map { ($0.deviceID, $0.push) }, uniquingKeysWith: { a, _ in a })
                return answer.list
            }
            if !fetched.isEmpty { self.states[to] = fetched }
            states = self.states[to] ?? [:]
        }
        let targets = self.builder.targets(of: list)
        guard !targets.isEmpty else {
            throw SenderError(
                .unknownRecipient,
                "\(list.userID)'s device list has no device but this one (\(self.builder.identity.deviceID)): "
                    + "nothing to send"
            )
        }
        let deliverable = targets.filter { states == nil || states?[$0.deviceID] == .active }
        guard !deliverable.isEmpty else {
            throw SenderError(
                .unknownRecipient,
                "none of \(list.userID)'s devices can receive pushes through the relay ("
                    + targets.map { "\($0.deviceID): \(states?[$0.deviceID]?.rawValue ?? "none")" }.joined(
                        separator: ", "
                    ) + "); nothing was sent: \(list.userID)'s devices must register their push address again"
            )
        }
        let tokenPath = try DeliveryTokenFile.path(for: list.userID, file: self.tokenFile, contacts: self.contacts)
        let token = try DeliveryTokenFile.read(path: tokenPath, userID: list.userID)
        let sealed = self.builder.sealEnvelopes(
            content,
            to: list,
            devices: deliverable,
            messageID: messageID,
            sentAtMs: sentAtMs
        )
        var pushes: [(deviceID: String, envelope: Envelope)] = []
        for item in sealed {
            if case .success(let push) = item.outcome { pushes.append((item.deviceID, push.envelope)) }
        }
        var accepted: [String: RelayAPI.AcceptedPush] = [:]
        var duplicate = false
        var refusal: SenderError? = nil
        if !pushes.isEmpty {
            do throws(RelayError) {
                let answer = try await self.client.submit(userID: list.userID, pushes: pushes, token: token)
                for push in answer.pushes { accepted[push.deviceID] = push }
                duplicate = answer.duplicate
            } catch {
                refusal = Self.senderError(error, userID: list.userID, tokenPath: tokenPath, submitting: true)
            }
        }
        let byDevice = Dictionary(sealed.map { ($0.deviceID, $0) }, uniquingKeysWith: { a, _ in a })
        return targets.map { device in
            guard let item = byDevice[device.deviceID] else {
                let state = states?[device.deviceID] ?? RelayAPI.PushState.none
                return SendResultLine(
                    line: line,
                    skipped: state.rawValue,
                    messageID: messageID,
                    device: device.deviceID
                )
            }
            switch item.outcome {
            case .failure(let error):
                return SendResultLine(line: line, error: error, device: device.deviceID)
            case .success:
                if let refusal {
                    return SendResultLine(line: line, error: refusal, device: device.deviceID, messageID: messageID)
                }
                guard let push = accepted[device.deviceID] else {
                    return SendResultLine(
                        line: line,
                        error: SenderError(.relayRefused, "the relay's answer names no push for this device"),
                        device: device.deviceID
                    )
                }
                return SendResultLine(
                    line: line,
                    relayPushID: push.pushID,
                    relayStatus: 202,
                    duplicate: duplicate,
                    messageID: messageID,
                    device: device.deviceID
                )
            }
        }
    }

    /// Fetches and verifies a user's list; the relay's refusals become the sender's codes.
    static func fetch(_ client: RelayClient, userID: String) async throws(SenderError) -> RelayClient.FetchedList {
        do {
            return try await client.fetchList(userID: userID)
        } catch {
            if let listError = error.listError {
                let code: SenderError.Code = listError == .deviceNotSignedIn ? .deviceNotSignedIn : .badListSignature
                throw SenderError(
                    code,
                    "refused \(userID)'s device list from the relay: \(error.message). Nothing was sent: whoever "
                        + "served this list may be listening in; compare fingerprints with \(userID)"
                )
            }
            throw Self.senderError(error, userID: userID, tokenPath: nil)
        }
    }

    /// Maps a relay refusal or failure to the sender's codes (and so to exit codes), saying what to do.
    ///
    /// - Parameter submitting: The request was a submit: an unknown outcome means the relay may have queued it.
    static func senderError(
        _ error: RelayError,
        userID: String,
        tokenPath: String?,
        submitting: Bool = false
    ) -> SenderError {
        let answer = "the relay answered \(error.code.rawValue): \(error.message)"
        switch error.code {
        case .missingDeliveryToken, .badDeliveryToken:
            return SenderError(
                .deliveryTokenRefused,
                "\(answer). Nothing was queued: ask \(userID) for a current delivery token and save it in "
                    + "\(tokenPath ?? "\(userID).delivery-token")"
            )
        case .unknownUser:
            return SenderError(.unknownRecipient, "\(answer). \(userID) has not published a device list to this relay")
        case .transport:
            return SenderError(.relayUnavailable, "\(error.message). Nothing was queued: send again later")
        case .rateLimited, .storageUnavailable, .storageFull, .draining:
            let wait = error.retryAfterSeconds.map { " in \($0) s" } ?? " later"
            return SenderError(.relayUnavailable, "\(answer). Nothing was queued: send again\(wait)")
        case .untrustedCertificate:
            return SenderError(
                .untrustedCertificate,
                "\(error.message). Nothing was sent: give --relay-ca the PEM CA certificate that signed the relay's "
                    + "certificate (a loopback relay's is ca.pem in its --self-signed-tls-dir), or fix --relay if it "
                    + "names the wrong server"
            )
        case .outcomeUnknown where submitting:
            return SenderError(
                .relayOutcomeUnknown,
                "\(error.message). Send the same message again with the same message id (the message_id of its result "
                    + "lines) once the relay answers: if it was queued, the recipient's device silences the copy"
            )
        case .outcomeUnknown:
            // Not a submit (a list fetch, or a device's own request): nothing can have been queued by it.
            return SenderError(.relayUnavailable, "\(error.message). Nothing was queued: send again later")
        case .noPushAddress, .pushAddressUnregistered, .unknownDevice:
            return SenderError(
                .relayRefused,
                "\(answer). Nothing was queued: \(userID)'s list changed; send again (the list is fetched anew)"
            )
        default:
            return SenderError(.relayRefused, "\(answer). Nothing was queued")
        }
    }
}

/// `--relay` sends through the relay; `--deliver` and `--topic` belong to sending to APNs directly.
func checkRelayFlags(_ delivery: DeliveryOptions, _ push: PushOptions) throws(SenderError) {
    guard !delivery.deliver else {
        throw SenderError(
            .usage,
            "--deliver and --relay are two ways to send: pick one (--relay needs no APNs key; --deliver is for a "
                + "server that holds one)"
        )
    }
    guard push.topic == nil else {
        throw SenderError(.usage, "--topic does not go with --relay: the relay uses the topic each device registered")
    }
}

/// `e2ee-send relay publish|register|tokens`: what a device does at the relay (docs/RELAY.md).
struct RelayCommands: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Publish your device list, register this device's push address, set your delivery tokens.",
        discussion: """
            These talk to the relay (--relay https://host:port, --relay-ca for a loopback CA). Each prints one \
            JSON line with the relay's answer. A refusal prints the relay's reason code and exits 69 (relay-refused), \
            75 when the relay cannot be reached or did not answer (relay-unavailable), 78 when its certificate does \
            not verify against --relay-ca (untrusted-certificate).
            """,
        subcommands: [RelayPublish.self, RelayRegister.self, RelayTokens.self]
    )
}

/// Runs one relay request with a client that is always shut down; relay errors become sender errors.
func withRelay(
    _ options: RelayOptions,
    userID: String,
    _ body: (RelayClient) async throws(RelayError) -> String
) async throws(SenderError) {
    guard let client = try options.makeClient() else {
        throw SenderError(.usage, "pass --relay https://host:port (the relay to talk to)")
    }
    let line: String
    do throws(RelayError) {
        line = try await body(client)
    } catch {
        await client.shutdown()
        throw RelaySender.senderError(error, userID: userID, tokenPath: nil)
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
            """
    )
    @OptionGroup var relay: RelayOptions
    @Option(name: .long, help: "The signed device list: the card file written by keygen, rotate, device add|remove.")
    var card: String

    func run() async throws {
        try await runCLI {
            let list: DeviceList
            do throws(E2EEError) {
                list = try DeviceList.load(path: self.card)
            } catch {
                throw SenderError(.unreadableCard, "cannot publish \(self.card): \(error.message)")
            }
            try await withRelay(self.relay, userID: list.userID) { (client) async throws(RelayError) -> String in
                let answer = try await client.publish(list)
                return #"{"list_version":\#(answer.listVersion),"stored":\#(answer.stored)}"#
            }
        }
    }
}

struct RelayRegister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Register this device's APNs push address with the relay (signed by the device key).",
        discussion: """
            The device must be in the user's list at the relay (relay publish first). Registering again replaces \
            the address (a new token from APNs). Prints {"device":"<id>","push":"active"}.
            """
    )
    @OptionGroup var identity: IdentityOptions
    @OptionGroup var relay: RelayOptions
    @Option(name: .long, help: "This device's APNs device token (hex).") var deviceToken: String
    @OptionGroup var topic: CardTopicOption
    @Option(name: .long, help: "The APNs environment the token belongs to.") var environment: APNsServer = .development

    func run() async throws {
        try await runCLI {
            let id = try self.identity.load()
            let token = try PushBuilder.validateDeviceToken(self.deviceToken)
            let address = PushAddress(
                deviceToken: token,
                topic: self.topic.value,
                environment: self.environment.rawValue
            )
            try await withRelay(self.relay, userID: id.userID) { (client) async throws(RelayError) -> String in
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
            Each --token-file holds one delivery token (64 hex digits, mode 0600); with --create, a missing file \
            gets a new random token. The relay stores only each token's SHA-256. Hand a token to a contact inside \
            the encrypted channel or out of band; the contact saves it as <contacts>/<your user id>.delivery-token. \
            To rotate, set the new and the old token, then only the new one; no --token-file closes you to every \
            sender. Prints {"tokens":N}.
            """
    )
    @OptionGroup var identity: IdentityOptions
    @OptionGroup var relay: RelayOptions
    @Option(name: .long, help: "A delivery token file (repeatable).") var tokenFile: [String] = []
    @Flag(name: .long, help: "Write a new random token to each --token-file that does not exist.") var create = false

    func run() async throws {
        try await runCLI {
            let id = try self.identity.load()
            var tokens: [DeliveryToken] = []
            for path in self.tokenFile {
                if self.create && !FileManager.default.fileExists(atPath: path) {
                    tokens.append(try DeliveryTokenFile.create(path: path))
                } else {
                    tokens.append(try DeliveryTokenFile.read(path: path, userID: id.userID))
                }
            }
            try await withRelay(self.relay, userID: id.userID) { (client) async throws(RelayError) -> String in
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
