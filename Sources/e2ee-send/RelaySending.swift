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

    @OptionGroup var connection: RelayConnectionOptions

    /// Connects to `--relay`; nil without it.
    func makeClient() throws(SenderError) -> RelayClient? {
        guard let url = self.relay else { return nil }
        return try self.connection.client(url: url)
    }
}

/// How to reach a relay, whichever command talks to it: `--relay-ca` and `--relay-timeout`.
struct RelayConnectionOptions: ParsableArguments {
    @Option(name: .long, help: "A PEM CA file to trust for --relay (e.g. a loopback relay's tls/ca.pem).")
    var relayCA: String?

    @Option(name: .long, help: "The most one request to the relay may take, in seconds (1-3600).")
    var relayTimeout: Int = 30

    func validate() throws {
        guard (1...3600).contains(self.relayTimeout) else {
            throw ValidationError("--relay-timeout must be 1-3600 seconds, got \(self.relayTimeout)")
        }
    }

    /// A client of the relay at `url`. A request may take 30 s by default (a submit includes the relay's durable
    /// commit; slow links and loaded servers are normal for a phone's app): longer than RelayClient's 10 s default.
    func client(url: String) throws(SenderError) -> RelayClient {
        do {
            return try RelayClient(baseURL: url, trustedCAPEMPath: self.relayCA, timeout: .seconds(self.relayTimeout))
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
    /// The file holding `userID`'s delivery token: `file` (`--delivery-token-file`), else
    /// `<contacts>/<user id>.delivery-token`; for the sender's own user (`own`), when the contacts folder has none,
    /// the file `relay tokens` writes by default: `<user id>.delivery-token` next to the identity.
    static func path(
        for userID: String,
        file: String?,
        contacts: String?,
        own: (userID: String, path: String)? = nil
    ) throws(SenderError) -> String {
        if let file { return file }
        let inContacts = contacts.map { $0 + "/" + userID + ".delivery-token" }
        if let own, own.userID == userID, !(inContacts.map { FileManager.default.fileExists(atPath: $0) } ?? false) {
            return own.path
        }
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
    /// The sender's own user's token file, as `relay tokens` writes it by default (next to the identity): what a
    /// message to one's own user (an answer's cancel) is submitted with when the contacts folder holds no copy.
    let ownTokenFile: String?
    /// Each fetched user's push states (device id → state), from the fetch that was pinned.
    private var states: [String: [String: RelayAPI.PushState]] = [:]

    init(
        client: RelayClient,
        builder: PushBuilder,
        trust: ContactTrust,
        contacts: String?,
        tokenFile: String?,
        ownTokenFile: String?
    ) {
        self.client = client
        self.builder = builder
        self.trust = trust
        self.contacts = contacts
        self.tokenFile = tokenFile
        self.ownTokenFile = ownTokenFile
    }

    /// One message to `to`: one result line per device of the recipient's list (the sender's own device included
    /// when `to` is the sender's own user).
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
        // Every device of the list, this one included when the list is its own user's (it silences its own
        // echo): a submit to a user covers the same devices whoever sends it (docs/PROTOCOL.md §11.7).
        let targets = self.builder.targets(of: list)
        let deliverable = targets.filter { states == nil || states?[$0.deviceID] == .active }
        if deliverable.isEmpty, list.userID == self.builder.identity.userID {
            // Nothing to send: this user's devices cannot be reached through the relay (a single device that never
            // registered its address). Not a failure: there is nobody else to tell.
            return targets.map { device in
                SendResultLine(
                    line: line,
                    skipped: (states?[device.deviceID] ?? RelayAPI.PushState.none).rawValue,
                    messageID: messageID,
                    device: device.deviceID
                )
            }
        }
        guard !deliverable.isEmpty else {
            throw SenderError(
                .unknownRecipient,
                "none of \(list.userID)'s devices can receive pushes through the relay ("
                    + targets.map { "\($0.deviceID): \(states?[$0.deviceID]?.rawValue ?? "none")" }.joined(
                        separator: ", "
                    ) + "); nothing was sent: \(list.userID)'s devices must register their push address again"
            )
        }
        let tokenPath = try DeliveryTokenFile.path(
            for: list.userID,
            file: self.tokenFile,
            contacts: self.contacts,
            own: self.ownTokenFile.map { (self.builder.identity.userID, $0) }
        )
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
                // The same codes as a card file's (one code for one fault): not well formed → malformed-list (65),
                // a certificate or the signature → 76.
                throw ContactDirectory.refusal(
                    E2EEError(listError, error.message),
                    of: userID,
                    source: "the relay's list"
                )
            }
            if error.code == .userMismatch {
                throw SenderError(
                    .userIDMismatch,
                    "refused the relay's list for \"\(userID)\": \(error.message). Nothing was sent (whoever served it "
                        + "may be listening in)"
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
