public import E2EECore
import Foundation
public import RelayClient

/// Sends messages through a relay: fetches and pins each recipient's list once per run, seals one envelope per
/// deliverable device, submits them in one request, and turns the relay's answer into result lines.
public struct RelaySender: Sendable {
    public let client: RelayClient
    public let builder: PushBuilder
    public private(set) var trust: ContactTrust
    public let contacts: String?
    public let tokenFile: String?
    /// The sender's own user's token file, as `relay tokens` writes it by default (next to the identity): what a
    /// message to one's own user (an answer's cancel) is submitted with when the contacts folder holds no copy.
    public let ownTokenFile: String?
    /// Each fetched user's push states (device id → state), from the fetch that was pinned.
    private var states: [String: [String: RelayAPI.PushState]] = [:]
    /// The delivery tokens read so far, read again when their file changes.
    private var tokens = DeliveryTokenFile.Cache()

    /// - Parameters:
    ///   - client: the relay.
    ///   - builder: the sender (its identity seals and signs).
    ///   - trust: the sender's pins and contacts folder: each fetched list is checked against them like a card.
    ///   - contacts: the contacts folder, where `<user id>.delivery-token` files are read.
    ///   - tokenFile: one delivery token file for every recipient (`--delivery-token-file`), else per user.
    ///   - ownTokenFile: the sender's own user's token file, as `relay tokens` writes it (next to the identity).
    public init(
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
    public mutating func send(
        _ content: MessageContent,
        to: String,
        messageID: MessageID,
        sentAtMs: UInt64?,
        line: Int
    ) async throws(SenderError) -> [SendResultLine] {
        switch try await self.prepare(content, to: to, messageID: messageID, sentAtMs: sentAtMs, line: line) {
        case .done(let results): return results
        case .submit(let submission): return await submission.complete(client: self.client)
        }
    }

    /// What one message needs from the sender's state: the recipient's list (fetched and pinned once per run), the
    /// devices to seal for, the delivery token. The sealing and the submit (``Submission/complete(client:)``) need
    /// nothing mutable, so a batch runs several at once.
    mutating func prepare(
        _ content: MessageContent,
        to: String,
        messageID: MessageID,
        sentAtMs: UInt64?,
        line: Int
    ) async throws(SenderError) -> Prepared {
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
            return .done(
                targets.map { device in
                    SendResultLine(
                        line: line,
                        skipped: (states?[device.deviceID] ?? RelayAPI.PushState.none).rawValue,
                        messageID: messageID,
                        device: device.deviceID
                    )
                }
            )
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
        let token = try self.tokens.token(path: tokenPath, userID: list.userID)
        return .submit(
            Submission(
                builder: self.builder,
                content: content,
                list: list,
                targets: targets,
                deliverable: deliverable,
                states: states,
                token: token,
                tokenPath: tokenPath,
                messageID: messageID,
                sentAtMs: sentAtMs,
                line: line
            )
        )
    }

    /// What ``prepare(_:to:messageID:sentAtMs:line:)`` decided: the line's results already, or a submit to make.
    enum Prepared: Sendable {
        case done([SendResultLine])
        case submit(Submission)
    }

    /// One message ready to seal and submit; it holds everything it needs, so several complete at once.
    struct Submission: Sendable {
        let builder: PushBuilder
        let content: MessageContent
        let list: DeviceList
        let targets: [DeviceList.Device]
        let deliverable: [DeviceList.Device]
        let states: [String: RelayAPI.PushState]?
        let token: DeliveryToken
        let tokenPath: String
        let messageID: MessageID
        let sentAtMs: UInt64?
        let line: Int

        /// Seals one envelope per deliverable device, submits them in one request and turns the answer into one
        /// result line per device of the list.
        ///
        /// - Parameter retryAfterBudget: how long, in total, refusals that name a `Retry-After` (rate limited,
        ///   storage busy, draining) are waited out and the submit sent again; 0 fails the line at the first one.
        func complete(client: RelayClient, retryAfterBudget: Duration = .zero) async -> [SendResultLine] {
            let sealed = self.builder.sealEnvelopes(
                self.content,
                to: self.list,
                devices: self.deliverable,
                messageID: self.messageID,
                sentAtMs: self.sentAtMs
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
                    let answer = try await Self.submit(
                        client,
                        userID: self.list.userID,
                        pushes: pushes,
                        token: self.token,
                        retryAfterBudget: retryAfterBudget
                    )
                    for push in answer.pushes { accepted[push.deviceID] = push }
                    duplicate = answer.duplicate
                } catch {
                    refusal = RelaySender.senderError(
                        error,
                        userID: self.list.userID,
                        tokenPath: self.tokenPath,
                        submitting: true
                    )
                }
            }
            let byDevice = Dictionary(sealed.map { ($0.deviceID, $0) }, uniquingKeysWith: { a, _ in a })
            let line = self.line
            let messageID = self.messageID
            return self.targets.map { device in
                guard let item = byDevice[device.deviceID] else {
                    let state = self.states?[device.deviceID] ?? RelayAPI.PushState.none
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
                        return SendResultLine(
                            line: line,
                            error: refusal,
                            device: device.deviceID,
                            messageID: messageID
                        )
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

        /// One submit, with one idempotency key for every attempt: transport failures are retried by the client;
        /// a refusal that says when to come back (`Retry-After`) is waited out while the budget lasts.
        static func submit(
            _ client: RelayClient,
            userID: String,
            pushes: [(deviceID: String, envelope: Envelope)],
            token: DeliveryToken,
            retryAfterBudget: Duration
        ) async throws(RelayError) -> RelayAPI.SubmitResponse {
            let key = IdempotencyKey.random()
            var waited = Duration.zero
            while true {
                do throws(RelayError) {
                    return try await client.submit(userID: userID, pushes: pushes, token: token, idempotencyKey: key)
                } catch {
                    let waits: Set<RelayError.Code> = [.rateLimited, .storageUnavailable, .storageFull, .draining]
                    guard waits.contains(error.code), let seconds = error.retryAfterSeconds, seconds >= 0,
                        waited + .seconds(max(seconds, 1)) <= retryAfterBudget
                    else { throw error }
                    // At least a second, as the header counts; a relay that says 0 is not hammered.
                    let pause = Duration.seconds(max(seconds, 1))
                    waited += pause
                    try? await Task.sleep(for: pause)
                }
            }
        }
    }

    /// Fetches and verifies a user's list; the relay's refusals become the sender's codes.
    public static func fetch(_ client: RelayClient, userID: String) async throws(SenderError) -> RelayClient.FetchedList
    {
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
    public static func senderError(
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
