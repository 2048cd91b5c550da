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

    func runBatch() async throws {
        let id = try self.identity.load()
        let directory = ContactDirectory(folder: self.contacts)
        let builder = PushBuilder(identity: id, topic: self.push.topic)
        let progress = isatty(2) == 1
        var cards: [String: ContactCard] = [:]
        var prepared: [(line: Int, built: BuiltPush?, error: SenderError?)] = []
        var number = 0
        while let text = readLine(strippingNewline: true) {
            number += 1
            if text.allSatisfy(\.isWhitespace) {
                number -= 1
                continue
            }
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
            if progress && number % 100 == 0 { note("e2ee-send: prepared \(number) lines") }
        }
        var lines: [SendResultLine] = []
        if self.delivery.deliver {
            let client = try self.delivery.makeClient()
            let requests = prepared.compactMap { $0.built?.request }
            if progress { note("e2ee-send: delivering \(requests.count) pushes") }
            var results = await client.send(requests).makeIterator()
            await client.shutdown()
            for item in prepared {
                if let built = item.built, let result = results.next() {
                    lines.append(SendResultLine(line: item.line, result: result, messageID: built.messageID))
                } else {
                    lines.append(SendResultLine(line: item.line, error: item.error!))
                }
            }
            for line in lines { printLine(line.jsonLine()) }
        } else {
            for item in prepared {
                if let built = item.built {
                    printLine(built.request.jsonLine())
                } else {
                    let line = SendResultLine(line: item.line, error: item.error!)
                    lines.append(line)
                    printLine(line.jsonLine())
                }
            }
        }
        if progress { note("e2ee-send: \(prepared.count) lines done") }
        if let failure = lines.lazy.compactMap(\.failure).first {
            note("e2ee-send: error: line \(lines.first { $0.failure != nil }!.line): \(failure.message)")
            throw ExitCode(failure.code.exitCode)
        }
    }
}
