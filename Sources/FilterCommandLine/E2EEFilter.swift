public import ArgumentParser
import CLISupport
import E2EECore
import Logging
public import NotificationFilter
import PushTransport
import ServiceLifecycle

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `e2ee-filter`'s commands: the device side. `run` decrypts payloads, decides what each becomes and hands live calls
/// to the call reporter; `once` decides one payload; `answer` / `decline` act on a ringing call.
///
/// The commands live in a library so tests parse and run them in process; the executable's `main` runs them with
/// its table of exit codes (`FilterExit`): a command throws the libraries' errors and never picks an exit status
/// itself, except usage errors (64: ArgumentParser's, and ``ToolExit`` for a combination of options found wrong
/// after parsing).
public struct E2EEFilter: AsyncParsableCommand, Sendable {
    public static let configuration = CommandConfiguration(
        commandName: "e2ee-filter",
        abstract: "Decide what each encrypted push becomes: ring, alert, missed-call, silence or fallback.",
        discussion: """
            run decides a stream of pushes (stdin or a gateway spool), once decides one push, answer and decline act \
            on a ringing call. Decisions and reason codes: README "Decisions and reason codes".
            \(E2EEFilter.exitCodes)
            """,
        version: ToolVersion.current,
        subcommands: [Run.self, Once.self, Answer.self, Decline.self]
    )

    public init() {}

    /// The exit codes every subcommand shares (answer and decline add 65 and 69), for `--help`.
    public static let exitCodes = """
        Exit codes: 0 ok (also after SIGTERM or SIGINT); 64 usage (a bad flag, a bad --config); 65 answer/decline: \
        no call with that id rang on this device; 66 a key, contacts, card, payload or spool file is missing, \
        unreadable or does not fit (a --card that does not list this device, a public card passed as \
        --identity); 69 answer/decline: the call is not ringing any more; 70 the state file cannot be used, or \
        another internal failure; 77 a secret file is readable by others, or a locked identity without its \
        passphrase.
        """
}

struct AccountFlags: ParsableArguments {
    @Option(name: .long, help: "The device's identity file (mode 0600). Default: $E2EE_IDENTITY_FILE.")
    var identity: String?
    @Option(name: .long, help: "A folder of contact cards (*.card.json) whose senders are accepted.")
    var contacts: String?
    @Option(
        name: .long,
        help:
            "A file holding the identity's passphrase, if it is locked (waited for; a wrong one is reported once and tried again when the file changes)."
    )
    var passphraseFile: String?
    @Option(
        name: .long,
        help:
            "This user's own device list (its public card). Its other devices become accepted senders, and while the identity is locked it gives this device's key ids. Default: the contacts folder's list of the identity's user id."
    )
    var card: String?
    @Option(
        name: .long,
        help: "This device's id in --card; needed only when the identity is locked and the list has several devices."
    )
    var deviceID: String?
    @Option(
        name: .long,
        help:
            "A JSON file listing several accounts: {\"accounts\":[{\"identity\",\"contacts\",\"name\",\"passphrase_file\",\"card\",\"device_id\"}]}."
    )
    var config: String?
    @Option(name: .long, help: "The SQLite state file (replay set, calls, missed calls, progress).")
    var state: String = AccountValues().state
    @Option(name: .long, help: "What a push from a sender not in the contacts becomes.")
    var unknownSender: FilterPolicy.UnknownSenderPolicy = AccountValues().unknownSender
    @Option(name: .long, help: "Allowed clock skew in milliseconds.")
    var clockSkewMs: Int64 = AccountValues().clockSkewMs
    @Option(
        name: .long,
        help:
            "How long message ids are remembered, in hours (fractions allowed, e.g. 0.05 for 3 minutes in a soak); older messages are `stale`. Finished calls are kept as long."
    )
    var replayRetentionHours: Double = AccountValues().replayRetentionHours
    @Option(
        name: .long,
        help: "The push service whose bodies arrive: \(PushTransports.names). Default \(AccountValues().transport)."
    )
    var transport: String = AccountValues().transport
    @Flag(name: .long, help: "Log debug details to stderr (never keys, plaintext or envelopes).")
    var verbose = false

    /// The parsed values, as plain values.
    var values: AccountValues {
        AccountValues(
            identity: self.identity,
            contacts: self.contacts,
            passphraseFile: self.passphraseFile,
            card: self.card,
            deviceID: self.deviceID,
            config: self.config,
            state: self.state,
            unknownSender: self.unknownSender,
            clockSkewMs: self.clockSkewMs,
            replayRetentionHours: self.replayRetentionHours,
            transport: self.transport,
            verbose: self.verbose
        )
    }

    func validate() throws { try self.values.validate() }
    func options() throws -> FilterAppOptions { try self.values.options() }
    func logger() -> Logger { self.values.logger() }
}

/// The account options of every command as plain values: what ``AccountFlags`` parses, and what `once`'s direct
/// parse (``OnceArguments``) fills without ArgumentParser.
struct AccountValues: Equatable, Sendable {
    var identity: String?
    var contacts: String?
    var passphraseFile: String?
    var card: String?
    var deviceID: String?
    var config: String?
    var state = "e2ee-filter.sqlite"
    var unknownSender: FilterPolicy.UnknownSenderPolicy = .fallback
    var clockSkewMs: Int64 = 30_000
    var replayRetentionHours: Double = 48
    /// A ``PushTransport`` name (`PushTransports.all`).
    var transport = APNsAlertTransport.name
    var verbose = false

    /// The transport ``transport`` names.
    var pushTransport: (any PushTransport.Type)? { PushTransports.named(self.transport) }

    func validate() throws {
        guard self.pushTransport != nil else {
            throw ValidationError(
                "--transport \(self.transport) is not a push service this filter reads: give one of "
                    + PushTransports.names
            )
        }
        guard
            self.config != nil || self.identity != nil
                || ProcessInfo.processInfo.environment["E2EE_IDENTITY_FILE"] != nil
        else {
            throw ValidationError("pass --identity FILE --contacts DIR, or --config FILE")
        }
    }

    func options() throws -> FilterAppOptions {
        var accounts: [FilterAppOptions.Account]
        if let config = self.config {
            accounts = try FilterAppOptions.Account.load(configFile: config)
        } else {
            let identity = self.identity ?? ProcessInfo.processInfo.environment["E2EE_IDENTITY_FILE"]!
            guard let contacts = self.contacts else {
                throw ToolExit(64, "--contacts DIR is required with --identity")
            }
            accounts = [
                .init(
                    identity: identity,
                    contacts: contacts,
                    passphraseFile: self.passphraseFile,
                    card: self.card,
                    deviceID: self.deviceID
                )
            ]
        }
        var options = FilterAppOptions(accounts: accounts, statePath: self.state)
        options.policy.unknownSender = self.unknownSender
        options.transport = self.pushTransport ?? APNsAlertTransport.self
        options.policy.clockSkewMs = self.clockSkewMs
        guard self.replayRetentionHours.isFinite, self.replayRetentionHours >= 0.001, self.replayRetentionHours <= 8_760
        else {
            throw ToolExit(
                64,
                "--replay-retention-hours \(self.replayRetentionHours) is out of range: give 0.001 (3.6 s) to 8760 (a year)"
            )
        }
        options.policy.replayRetentionMs = Int64((self.replayRetentionHours * 3_600_000).rounded())
        return options
    }

    func logger() -> Logger {
        .standardError(label: "e2ee-filter", level: self.verbose ? .debug : .warning)
    }
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Consume payloads and write one decision per payload, in input order.",
        discussion: """
            Input: JSON lines on stdin (request lines as e2ee-send prints them, or bare APNs bodies), or --spool FILE \
            (the gateway's spool, followed as it grows; resumed after a restart). Decisions go to stdout or --output \
            FILE (crash-safe: a restart writes what a kill lost, never twice). SIGTERM finishes the batch in flight \
            and exits 0. A changed identity file (e2ee-send rotate) is read again before the next batch is decided: \
            pushes sealed to the new key open without a restart.
            \(E2EEFilter.exitCodes)
            """
    )
    @OptionGroup var account: AccountFlags
    @Option(name: .long, help: "The gateway's spool file to consume instead of stdin.") var spool: String?
    @Flag(name: .long, help: "At the end of the spool, exit instead of waiting for more.") var exitAtEnd = false
    @Option(name: .long, help: "Write decisions to this file (appended) instead of stdout.") var output: String?
    @Option(name: .long, help: "Write call events to this file, or - for stdout.") var events: String?
    @Option(name: .long, help: "A shell command run per call event, with the event JSON on its stdin.") var hook:
        String?
    @Option(
        name: .long,
        help:
            "This device's push token (APNs: hex): spool records and request lines for other tokens are skipped without a decision (one spool shared by several devices)."
    )
    var deviceToken: String?

    func validate() throws {
        let transport = self.account.values.pushTransport ?? APNsAlertTransport.self
        if let token = self.deviceToken, let problem = transport.deviceTokenProblem(token) {
            throw ValidationError("--device-token \(token) is not a device token: \(problem)")
        }
        if let hook = self.hook, hook.allSatisfy(\.isWhitespace) {
            throw ValidationError(
                "--hook is blank: give the shell command to run per call event (it gets the event JSON on stdin), "
                    + "or leave --hook out"
            )
        }
    }

    func run() async throws {
        var options = try self.account.options()
        options.input = self.spool.map { .spool(path: $0) } ?? .standardInput
        options.exitAtEndOfInput = self.exitAtEnd || self.spool == nil
        options.decisionsPath = self.output
        options.eventsPath = self.events
        options.hookCommand = self.hook
        options.deviceToken = self.deviceToken
        let logger = self.account.logger()
        let parts = try FilterApp.build(options, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: parts.daemon, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
        let violations = await parts.reporter.violations
        if violations > 0 {
            StandardError.writeLine("e2ee-filter: \(violations) call handoffs were not reported")
            throw FilterError(code: .unreportedHandoff, message: "call handoff rule violated")
        }
    }
}

struct Once: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decide one payload (stdin or --payload FILE) and exit, as an extension launched per push would.",
        discussion: """
            Prints the payload's one decision line (and first those of payloads a locked run kept). It shares the \
            state file (--state) with run: replays, calls and the live-call limit are decided from it, so once and \
            run decide alike.
            \(E2EEFilter.exitCodes)
            """
    )
    @OptionGroup var account: AccountFlags
    @Option(name: .long, help: "A file holding the payload (a request line or an APNs body); default stdin.")
    var payload: String?

    func run() async throws {
        try await OnceArguments(account: self.account.values, payload: self.payload).decide()
    }
}

/// `once`'s options as plain values, and its work.
///
/// `once` is the process launched per push, as a notification service extension is, so its cold start is the time
/// to a decision. ArgumentParser reflects over every option's property wrapper and instantiates their generic types
/// at run time, which is a large part of that start; ``parse(_:)`` reads the common spelling (`--name value`,
/// `--verbose`) into plain values instead. Anything else goes to ArgumentParser, so usage errors, `--help` and every
/// other spelling are exactly the parser's; a test holds both parses equal.
struct OnceArguments: Equatable, Sendable {
    var account = AccountValues()
    /// `--payload FILE`; nil for stdin.
    var payload: String?

    /// The values of `e2ee-filter once …` (`arguments` without the executable's path), or nil for any spelling it
    /// does not read (then ArgumentParser parses it): an unknown or repeated name, `--name=value`, a missing value
    /// or one starting with `-`, a value the option does not take, or options `validate()` refuses.
    static func parse(_ arguments: [String]) -> OnceArguments? {
        guard arguments.first == "once" else { return nil }
        var parsed = OnceArguments()
        // An array, not a Set: at most a dozen names, and no hashed collection's generic metadata to build at start.
        var seen: [String] = []
        var index = 1
        while index < arguments.count {
            let name = arguments[index]
            guard !seen.contains(name) else { return nil }
            seen.append(name)
            if name == "--verbose" {
                parsed.account.verbose = true
                index += 1
                continue
            }
            guard index + 1 < arguments.count, !arguments[index + 1].hasPrefix("-") else { return nil }
            let value = arguments[index + 1]
            index += 2
            switch name {
            case "--identity": parsed.account.identity = value
            case "--contacts": parsed.account.contacts = value
            case "--passphrase-file": parsed.account.passphraseFile = value
            case "--card": parsed.account.card = value
            case "--device-id": parsed.account.deviceID = value
            case "--config": parsed.account.config = value
            case "--state": parsed.account.state = value
            case "--payload": parsed.payload = value
            case "--unknown-sender":
                guard let policy = FilterPolicy.UnknownSenderPolicy(rawValue: value) else { return nil }
                parsed.account.unknownSender = policy
            case "--clock-skew-ms":
                guard let skew = Int64(value) else { return nil }
                parsed.account.clockSkewMs = skew
            case "--replay-retention-hours":
                guard let hours = Double(value) else { return nil }
                parsed.account.replayRetentionHours = hours
            case "--transport": parsed.account.transport = value
            default: return nil
            }
        }
        guard (try? parsed.account.validate()) != nil else { return nil }
        return parsed
    }

    /// Decides the payload and prints its line (and first those of payloads a locked `run` kept).
    func decide() async throws {
        let payload: [UInt8]
        if let path = self.payload {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw FilterError("cannot read --payload \(path)")
            }
            payload = Array(data)
        } else {
            payload = StandardInput.readAll()
        }
        try await FilterApp.once(payload, options: self.account.options(), logger: self.account.logger()) { lines in
            // A reader that went away loses the line, not the decision: it is in the state file.
            for line in lines { try? StandardOutput.writeLine(line) }
        }
    }
}

extension E2EEFilter {
    /// `once` read without ArgumentParser (``OnceArguments``), for `runAsTool(mapping:direct:)`: its work, or nil
    /// when ArgumentParser must parse the command line.
    public static func direct(_ arguments: [String]) -> (@Sendable () async throws -> Void)? {
        guard let once = OnceArguments.parse(arguments) else { return nil }
        return { try await once.decide() }
    }
}

/// `answer` and `decline`: one command shape, one action each.
protocol CallActionCommand: AsyncParsableCommand {
    static var action: CallUserAction { get }
    var account: AccountFlags { get }
    var callID: String { get }
    var accountName: String? { get }
}

extension CallActionCommand {
    static func discussion(_ what: String) -> String {
        """
        \(what) Recorded in the state file (--state) in one transaction; a running `e2ee-filter run` on the same \
        state applies it within a tick (call event `answered` / `declined`), else the next run does at start. \
        Prints on stdout the `e2ee-send batch` lines this device must send, so a script does \
        `e2ee-filter \(Self.action) … | e2ee-send batch --identity <this device> --relay …` (the cancel to this \
        user goes to every device of it, this one included, which silences it as own-echo; e2ee-send finds this \
        user's delivery token next to the identity, where relay tokens writes it). \
        Exit codes: 0 done; 64 usage (a bad call id, several accounts and no --account); 65 no call with this id \
        rang on this device; 66 a key, contacts or card file is missing or does not fit; 69 the call is not ringing \
        (already answered, declined, ended or missed; the message says which); 70 the state file cannot be used.
        """
    }

    func validate() throws {
        guard UUID(uuidString: self.callID) != nil else {
            throw ValidationError("--call-id \(self.callID) is not a call id: give the UUID of a ringing call")
        }
    }

    func run() async throws {
        let options = try self.account.options()
        let parts = try FilterApp.build(options, logger: self.account.logger())
        let outcome = try await parts.engine.perform(
            Self.action,
            callID: UUID(uuidString: self.callID)!,
            account: self.accountName
        )
        for line in outcome.requestLines { try? StandardOutput.writeLine(line) }
    }
}

struct Answer: CallActionCommand {
    static let action = CallUserAction.answer
    static let configuration = CommandConfiguration(
        abstract: "Answer a ringing call (CXAnswerCallAction): it becomes active; the user's other devices stop.",
        discussion: Self.discussion(
            "The call becomes active (never a missed call); prints one cancel, answeredElsewhere, to this user."
        )
    )
    @OptionGroup var account: AccountFlags
    @Option(name: .long, help: "The ringing call's id (a UUID).") var callID: String
    @Option(name: .customLong("account"), help: "The account, when --config serves several.") var accountName: String?
}

struct Decline: CallActionCommand {
    static let action = CallUserAction.decline
    static let configuration = CommandConfiguration(
        abstract: "Decline a ringing call (CXEndCallAction): it ends; the other devices stop, the caller is told.",
        discussion: Self.discussion(
            "The call ends as declined (never a missed call); prints two cancels, declinedElsewhere, to this user "
                + "and to the caller."
        )
    )
    @OptionGroup var account: AccountFlags
    @Option(name: .long, help: "The ringing call's id (a UUID).") var callID: String
    @Option(name: .customLong("account"), help: "The account, when --config serves several.") var accountName: String?
}

extension FilterPolicy.UnknownSenderPolicy: ExpressibleByArgument {}
