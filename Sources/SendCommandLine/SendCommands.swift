import ArgumentParser
import E2EECore
import Foundation
import Sender

/// What every single-message command shares: one option group (keys, recipient, topic, delivery) and one way to
/// build, print or deliver the push. Each command builds its message from typed flags, so a bad value is refused
/// by the parser naming the flag (`--call-id`), never as a JSON field.
struct SendOptions: ParsableArguments {
    @OptionGroup var identity: IdentityOptions
    @OptionGroup var recipient: RecipientOptions
    @OptionGroup var pins: PinsOptions
    @OptionGroup var push: PushOptions
    @OptionGroup var delivery: DeliveryOptions
    @OptionGroup var relay: RelayOptions
    @OptionGroup var deliveryToken: DeliveryTokenOptions

    /// Seals the message once per device of the recipient's accepted list and prints (or delivers, or submits to
    /// the relay) one line per device; exits with the first failure's code.
    func send(_ makeContent: (Identity) throws(SenderError) -> MessageContent) async throws {
        if self.relay.relay != nil {
            try await self.sendThroughRelay(makeContent)
            return
        }
        try await runCLI {
            let id = try self.identity.load()
            var trust = try self.pins.trust(identityPath: self.identity.identityPath, contacts: self.recipient.contacts)
            let list = try trust.list(for: self.recipient.to)
            let messageID = self.recipient.messageID ?? .random()
            let pushes = try PushBuilder(identity: id, formats: self.push.formats).fanOut(
                try makeContent(id),
                to: list,
                deviceToken: self.recipient.deviceToken,
                messageID: messageID,
                sentAtMs: self.recipient.sentAtMs
            )
            var lines: [SendResultLine?] = []
            if self.delivery.deliver {
                lines = try await self.deliver(pushes)
            }
            var firstFailure: SenderError?
            for (index, push) in pushes.enumerated() {
                let text: String
                let failure: SenderError?
                if let skipped = push.skipped {
                    note("e2ee-send: skipped device \(push.deviceID) (this device): \(skipped), nothing to echo to")
                    try printLine(
                        SendResultLine(line: 1, skipped: skipped, messageID: messageID, device: push.deviceID)
                            .jsonLine()
                    )
                    continue
                }
                switch (push.outcome, lines.isEmpty ? nil : lines[index]) {
                case (.failure(let error), _):
                    text = SendResultLine(line: 1, error: error, device: push.deviceID).jsonLine()
                    failure = error
                case (.success(let built), .none):
                    text = built.push.jsonLine(device: push.deviceID)
                    failure = nil
                case (.success, let result?):
                    text = result.jsonLine()
                    failure = result.failure
                }
                if let failure {
                    note("e2ee-send: error: device \(push.deviceID): \(failure.message)")
                    firstFailure = firstFailure ?? failure
                }
                do throws(SenderError) {
                    try printLine(text)
                } catch {
                    let outcome = self.delivery.deliver ? "were still delivered" : "were not sent"
                    throw SenderError(error.code, "\(error.message); the pushes asked for \(outcome)")
                }
            }
            if let firstFailure { throw E2EESend.exitCode(firstFailure) }
        }
    }

    /// `--relay`: fetches the recipient's list from the relay, seals one envelope per deliverable device, submits
    /// them with the recipient's delivery token and prints one result line per device.
    func sendThroughRelay(_ makeContent: (Identity) throws(SenderError) -> MessageContent) async throws {
        try await runCLI {
            try checkRelayFlags(self.delivery, self.push)
            guard self.recipient.deviceToken == nil else {
                throw SenderError(
                    .usage,
                    "--device-token does not go with --relay: the relay delivers to the address each device registered"
                )
            }
            let id = try self.identity.load()
            guard
                var sender = try self.relay.sender(
                    identity: self.identity,
                    id,
                    pins: self.pins,
                    contacts: self.recipient.contacts,
                    tokenFile: self.deliveryToken.deliveryTokenFile
                )
            else { return }
            let lines: [SendResultLine]
            do throws(SenderError) {
                lines = try await sender.send(
                    try makeContent(id),
                    to: self.recipient.to,
                    messageID: self.recipient.messageID ?? .random(),
                    sentAtMs: self.recipient.sentAtMs,
                    line: 1
                )
            } catch {
                await sender.client.shutdown()
                throw error
            }
            await sender.client.shutdown()
            var firstFailure: SenderError?
            for line in lines {
                if let failure = line.failure {
                    note("e2ee-send: error: device \(line.device ?? "-"): \(failure.message)")
                    firstFailure = firstFailure ?? failure
                } else if let skipped = line.skipped {
                    note("e2ee-send: skipped device \(line.device ?? "-"): its push address at the relay is \(skipped)")
                }
                do throws(SenderError) {
                    try printLine(line.jsonLine())
                } catch {
                    throw SenderError(error.code, "\(error.message); the pushes asked for were still queued")
                }
            }
            if let firstFailure { throw E2EESend.exitCode(firstFailure) }
        }
    }

    /// Delivers every built push at once; results in the devices' order (nil for a device without a push).
    func deliver(_ pushes: [DevicePush]) async throws -> [SendResultLine?] {
        let client = try self.delivery.makeClient()
        let results = await withTaskGroup(of: (Int, SendResultLine).self) { group in
            for (index, push) in pushes.enumerated() {
                guard case .success(let built) = push.outcome else { continue }
                group.addTask {
                    let line = await client.send(built.push, line: 1, messageID: built.messageID, device: push.deviceID)
                    return (index, line)
                }
            }
            var lines = [SendResultLine?](repeating: nil, count: pushes.count)
            for await (index, line) in group { lines[index] = line }
            return lines
        }
        await client.shutdown()
        return results
    }
}

/// Parses a message id flag (32 hex digits), naming the rule when it is wrong.
func parseMessageID(_ value: String) throws -> MessageID {
    do {
        return try SendRequest.messageID(value)
    } catch {
        throw ValidationError(error.message)
    }
}

/// One command per kind of message (`call`, `cancel`, `text`, `receipt`), in `--help` order: a new kind's command
/// is added here, next to the others.
let messageCommands: [any ParsableCommand.Type] = [Call.self, Cancel.self, Text.self, Receipt.self]

struct Call: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a call invite (each of the recipient's devices rings).",
        discussion: "\(E2EESend.exitCodes)"
    )
    @OptionGroup var options: SendOptions
    @Option(name: .long, help: "The call id (UUID); default: a new one.") var callID: UUID?
    @Flag(name: .long, help: "A video call.") var video = false
    @Option(name: .long, help: "Seconds the callee may ring (1-3600).") var ringTimeout: Int = 30
    @Option(name: .long, help: "The caller handle shown by CallKit; default: your user id.") var handle: String?
    @Option(name: .long, help: "Other participants of a group call.") var participant: [String] = []
    @Option(name: .long, help: "A custom header name=value (repeatable).") var header: [String] = []

    func validate() throws {
        guard (1...3600).contains(self.ringTimeout) else {
            throw ValidationError("--ring-timeout must be 1-3600 seconds, got \(self.ringTimeout)")
        }
        _ = try self.headers()
    }

    func headers() throws -> [String: String] {
        var headers: [String: String] = [:]
        for pair in self.header {
            guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else {
                throw ValidationError("--header takes name=value, got \"\(pair)\"")
            }
            headers[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
        }
        return headers
    }

    func run() async throws {
        let headers = try self.headers()
        try await self.options.send { id in
            .callInvite(
                CallInvite(
                    callID: self.callID ?? UUID(),
                    callerHandle: self.handle ?? id.userID,
                    displayName: id.displayName,
                    hasVideo: self.video,
                    ringTimeoutSeconds: UInt16(self.ringTimeout),
                    groupParticipants: self.participant,
                    customHeaders: headers
                )
            )
        }
    }
}

struct Cancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cancel a call (the recipient's devices stop ringing).",
        discussion: "\(E2EESend.exitCodes)"
    )
    @OptionGroup var options: SendOptions
    @Option(name: .long, help: "The call id (UUID) of the invite.") var callID: UUID
    @Option(name: .long, help: "Why the call ends.") var reason: CancelReasonArgument = .remoteEnded

    func run() async throws {
        try await self.options.send { _ in .callCancel(CallCancel(callID: self.callID, reason: self.reason.reason)) }
    }
}

struct Text: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a text message.",
        discussion: "\(E2EESend.exitCodes)"
    )
    @OptionGroup var options: SendOptions
    @Option(name: .long, help: "The conversation id.") var thread: String = ""
    @Option(name: .long, help: "The title.") var title: String = ""
    @Option(name: .long, help: "The text; '-' reads it from stdin.") var body: String

    func run() async throws {
        let body =
            self.body == "-"
            ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : self.body
        try await self.options.send { _ in
            .text(TextMessage(threadID: self.thread, title: self.title, body: body))
        }
    }
}

struct Receipt: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a receipt for earlier messages (never shown).",
        discussion: "\(E2EESend.exitCodes)"
    )
    @OptionGroup var options: SendOptions
    @Option(
        name: .customLong("for"),
        help: "A message id (32 hex digits) to acknowledge (repeatable).",
        transform: parseMessageID
    ) var ids: [MessageID]

    func run() async throws {
        try await self.options.send { _ in .receipt(E2EECore.Receipt(messageIDs: self.ids)) }
    }
}

struct Batch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read send requests as JSON lines on stdin; print one result line each, in input order.",
        discussion: """
            Each line: {"kind":"call|cancel|text|receipt","to":"<user id or card.json>", ...}; every key is listed \
            in README "Batch requests", and an unknown key is an error naming it. A bad line gets an error result \
            line and the batch goes on. A line is sealed once per device of the recipient and gets one result \
            line per device, each naming "device"; a refused recipient (exit 76 codes) fails its lines and the \
            batch goes on. Input is streamed: sealing overlaps delivery, memory stays flat, results come in input \
            order as soon as they are known. With --relay, each line's envelopes go in one submit, up to --window \
            submits are in flight at once (1: one at a time, in input order), a refusal that names a Retry-After is \
            waited out for up to --retry-after-limit seconds per line, each user's list is fetched from the relay \
            once per run, and delivery \
            tokens are read from --contacts DIR as <user id>.delivery-token (your own user's, for the cancels \
            e2ee-filter answer|decline prints, also from <user id>.delivery-token next to the identity, where \
            relay tokens writes it). A line to your own user goes to every device of it, this one included. Exit \
            status: 0 when every result succeeded or was skipped, 74 when stdout could not be written, else the \
            exit code of the first failed result.
            \(E2EESend.exitCodes)
            """
    )
    @OptionGroup var identity: IdentityOptions
    @Option(name: .long, help: "A folder of contact cards named <user id>.card.json.") var contacts: String?
    @OptionGroup var pins: PinsOptions
    @OptionGroup var push: PushOptions
    @OptionGroup var delivery: DeliveryOptions
    @OptionGroup var relay: RelayOptions
    @Option(
        name: .long,
        help:
            "With --relay: how long, in seconds per line, refusals that name a Retry-After (rate limited, storage busy, a relay restarting) are waited out before the line fails; 0 fails it at once."
    )
    var retryAfterLimit: Int = 30

    func validate() throws {
        guard (0...3600).contains(self.retryAfterLimit) else {
            throw ValidationError("--retry-after-limit must be 0-3600 seconds, got \(self.retryAfterLimit)")
        }
    }

    func run() async throws {
        try await runCLI {
            if self.relay.relay != nil {
                try await self.runRelayBatch()
            } else {
                try await self.runBatch()
            }
        }
    }

    /// `batch --relay`: lines checked in input order; up to `--window` submits in flight; results in input order.
    func runRelayBatch() async throws {
        try checkRelayFlags(self.delivery, self.push)
        let id = try self.identity.load()
        guard
            var sender = try self.relay.sender(
                identity: self.identity,
                id,
                pins: self.pins,
                contacts: self.contacts,
                tokenFile: nil
            )
        else { return }
        let summary = await sender.run(
            lines: StandardInputLines(),
            window: self.delivery.window,
            retryAfterBudget: .seconds(self.retryAfterLimit),
            output: printLine
        ) { note("e2ee-send: \($0)") }
        await sender.client.shutdown()
        try finish(summary)
    }

    func runBatch() async throws {
        let id = try self.identity.load()
        var batch = BatchRequests(
            builder: PushBuilder(identity: id, formats: self.push.formats),
            trust: try self.pins.trust(identityPath: self.identity.identityPath, contacts: self.contacts)
        )
        let client = self.delivery.deliver ? try self.delivery.makeClient() : nil
        // Sealing runs on every core while earlier pushes are in flight; lines are parsed and checked in order.
        let sealer = batch
        let summary = await SendPipeline(depth: self.delivery.pipelineDepth).run(
            lines: StandardInputLines(),
            client: client,
            sealers: ProcessInfo.processInfo.activeProcessorCount,
            stage: { _, line in batch.stage(line: line) },
            seal: { sealer.seal($0) },
            output: printLine
        )
        await client?.shutdown()
        try finish(summary)
    }
}
