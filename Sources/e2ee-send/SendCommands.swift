import ArgumentParser
import E2EECore
import Foundation
import Sender

/// What every single-message command shares: load keys, build one uniform request, print or deliver it.
struct SingleSend {
    var identity: IdentityOptions
    var recipient: RecipientOptions
    var push: PushOptions
    var delivery: DeliveryOptions

    func run(_ makeContent: (Identity) throws -> MessageContent) async throws {
        try await runCLI {
            let id = try self.identity.load()
            let card = try ContactDirectory(folder: self.recipient.contacts).card(for: self.recipient.to)
            let messageID = try self.recipient.messageID.map { try SendRequest.messageID($0) }
            let built = try PushBuilder(identity: id, topic: self.push.topic).build(
                try makeContent(id),
                to: card,
                deviceToken: self.recipient.deviceToken,
                messageID: messageID ?? .random(),
                sentAtMs: self.recipient.sentAtMs
            )
            guard self.delivery.deliver else {
                printLine(built.request.jsonLine())
                return
            }
            let client = try self.delivery.makeClient()
            let result = await client.send(built.request)
            await client.shutdown()
            let line = SendResultLine(line: 1, result: result, messageID: built.messageID)
            printLine(line.jsonLine())
            if let failure = line.failure { throw failure }
        }
    }
}

struct Call: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send a call invite (the recipient's device rings).")
    @OptionGroup var identity: IdentityOptions
    @OptionGroup var recipient: RecipientOptions
    @OptionGroup var push: PushOptions
    @OptionGroup var delivery: DeliveryOptions
    @Option(name: .long, help: "The call id (UUID); default: a new one.") var callID: String?
    @Flag(name: .long, help: "A video call.") var video = false
    @Option(name: .long, help: "Seconds the callee may ring (1-3600).") var ringTimeout: Int = 30
    @Option(name: .long, help: "The caller handle shown by CallKit; default: your user id.") var handle: String?
    @Option(name: .long, help: "Other participants of a group call.") var participant: [String] = []
    @Option(name: .long, help: "A custom header name=value (repeatable).") var header: [String] = []

    func run() async throws {
        var request = SendRequest(kind: "call", to: self.recipient.to)
        request.callID = self.callID ?? UUID().uuidString
        request.video = self.video
        request.ringTimeout = self.ringTimeout
        request.handle = self.handle
        request.participants = self.participant
        var headers: [String: String] = [:]
        for pair in self.header {
            guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else {
                throw fail(SenderError(.usage, "--header takes name=value, got \"\(pair)\""))
            }
            headers[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
        }
        request.headers = headers
        try await SingleSend(
            identity: self.identity,
            recipient: self.recipient,
            push: self.push,
            delivery: self.delivery
        )
        .run { id in try request.content(sender: id) }
    }
}

struct Cancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Cancel a call (the recipient's device stops ringing).")
    @OptionGroup var identity: IdentityOptions
    @OptionGroup var recipient: RecipientOptions
    @OptionGroup var push: PushOptions
    @OptionGroup var delivery: DeliveryOptions
    @Option(name: .long, help: "The call id (UUID) of the invite.") var callID: String
    @Option(name: .long, help: "remoteEnded, answeredElsewhere or declinedElsewhere.") var reason: String =
        "remoteEnded"

    func run() async throws {
        var request = SendRequest(kind: "cancel", to: self.recipient.to)
        request.callID = self.callID
        request.reason = self.reason
        try await SingleSend(
            identity: self.identity,
            recipient: self.recipient,
            push: self.push,
            delivery: self.delivery
        )
        .run { id in try request.content(sender: id) }
    }
}

struct Text: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send a text message.")
    @OptionGroup var identity: IdentityOptions
    @OptionGroup var recipient: RecipientOptions
    @OptionGroup var push: PushOptions
    @OptionGroup var delivery: DeliveryOptions
    @Option(name: .long, help: "The conversation id.") var thread: String = ""
    @Option(name: .long, help: "The title.") var title: String = ""
    @Option(name: .long, help: "The text; '-' reads it from stdin.") var body: String

    func run() async throws {
        var request = SendRequest(kind: "text", to: self.recipient.to)
        request.thread = self.thread
        request.title = self.title
        request.body =
            self.body == "-"
            ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : self.body
        try await SingleSend(
            identity: self.identity,
            recipient: self.recipient,
            push: self.push,
            delivery: self.delivery
        )
        .run { id in try request.content(sender: id) }
    }
}

struct Receipt: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send a receipt for earlier messages (never shown).")
    @OptionGroup var identity: IdentityOptions
    @OptionGroup var recipient: RecipientOptions
    @OptionGroup var push: PushOptions
    @OptionGroup var delivery: DeliveryOptions
    @Option(name: .customLong("for"), help: "A message id (32 hex digits) to acknowledge (repeatable).") var ids:
        [String]

    func run() async throws {
        var request = SendRequest(kind: "receipt", to: self.recipient.to)
        request.messageIDs = self.ids
        try await SingleSend(
            identity: self.identity,
            recipient: self.recipient,
            push: self.push,
            delivery: self.delivery
        )
        .run { id in try request.content(sender: id) }
    }
}

struct Batch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read send requests as JSON lines on stdin; print one result line each, in input order.",
        discussion: """
            Each line: {"kind":"call|cancel|text|receipt","to":"<user id or card.json>", ...} (see SendRequest in \
            the Sender library). A bad line gets an error result line and the batch goes on. Exit status: 0 when \
            every line succeeded, else the exit code of the first failed line.
            """
    )
    @OptionGroup var identity: IdentityOptions
    @Option(name: .long, help: "A folder of contact cards named <user id>.card.json.") var contacts: String?
    @OptionGroup var push: PushOptions
    @OptionGroup var delivery: DeliveryOptions

    func run() async throws {
        try await runCLI { try await self.runBatch() }
    }

    /// Lines are read, sealed and printed (or delivered) in chunks of this many, so memory stays flat however
    /// long the input is; output stays in input order.
    static let chunkSize = 1000

    func runBatch() async throws {
        let id = try self.identity.load()
        let directory = ContactDirectory(folder: self.contacts)
        let builder = PushBuilder(identity: id, topic: self.push.topic)
        let progress = isatty(2) == 1
        let client = self.delivery.deliver ? try self.delivery.makeClient() : nil
        var cards: [String: ContactCard] = [:]
        var number = 0
        var firstFailure: (line: Int, error: SenderError)?
        var done = false
        while !done {
            var prepared: [(line: Int, built: BuiltPush?, error: SenderError?)] = []
            while prepared.count < Self.chunkSize {
                guard let text = readLine(strippingNewline: true) else {
                    done = true
                    break
                }
                if text.allSatisfy(\.isWhitespace) { continue }
                number += 1
                do {
                    let request = try SendRequest.parse(line: text)
                    let card = try cards[request.to] ?? directory.card(for: request.to)
                    cards[request.to] = card
                    let messageID = try request.messageID.map { try SendRequest.messageID($0) }
                    let built = try builder.build(
                        request.content(sender: id),
                        to: card,
                        deviceToken: request.deviceToken,
                        messageID: messageID ?? .random(),
                        sentAtMs: request.sentAtMs
                    )
                    prepared.append((number, built, nil))
                } catch let error as SenderError {
                    prepared.append((number, nil, error))
                } catch {
                    prepared.append((number, nil, SenderError(.badRequest, "\(error)")))
                }
            }
            var results = await (client?.send(prepared.compactMap { $0.built?.request }) ?? []).makeIterator()
            for item in prepared {
                let line: SendResultLine
                if let built = item.built {
                    if client != nil, let result = results.next() {
                        line = SendResultLine(line: item.line, result: result, messageID: built.messageID)
                    } else {
                        printLine(built.request.jsonLine())
                        continue
                    }
                } else {
                    line = SendResultLine(line: item.line, error: item.error!)
                }
                printLine(line.jsonLine())
                if firstFailure == nil, let failure = line.failure { firstFailure = (item.line, failure) }
            }
            if progress && !prepared.isEmpty { note("e2ee-send: \(number) lines done") }
        }
        await client?.shutdown()
        if let (line, failure) = firstFailure {
            note("e2ee-send: error: line \(line): \(failure.message)")
            throw ExitCode(failure.code.exitCode)
        }
    }
}
