import ArgumentParser
import E2EECore
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

    /// A sender through `--relay` for the identity `id` (loaded from `identity`), with its pins and contacts; nil
    /// without `--relay`.
    func sender(
        identity: IdentityOptions,
        _ id: Identity,
        pins: PinsOptions,
        contacts: String?,
        tokenFile: String?
    ) throws(SenderError) -> RelaySender? {
        let trust = try pins.trust(identityPath: identity.identityPath, contacts: contacts)
        guard let client = try self.makeClient() else { return nil }
        return RelaySender(
            client: client,
            builder: PushBuilder(identity: id, formats: SendPushServices.formats(topic: nil)),
            trust: trust,
            contacts: contacts,
            tokenFile: tokenFile,
            ownTokenFile: try identity.siblingFile(userID: id.userID, suffix: ".delivery-token")
        )
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
