public import ArgumentParser
import CLISupport
import E2EECore
import Logging
public import NotificationFilter
import ServiceLifecycle

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `e2ee-filter`: the device side. Decrypts payloads, decides what each becomes, hands live calls to the call
/// reporter; `answer` / `decline` act on a ringing call. Exit codes: 0 ok (also after SIGTERM); 64 usage; 65 answer
/// or decline: no call with that id rang on this device; 66 a key, contacts, card or spool file is missing,
/// unreadable or does not fit; 69 answer or decline: the call is no longer ringing; 70 the state file cannot be
/// used, or another internal failure; 77 a secret file is readable by others.
@main
struct E2EEFilter: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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

    /// The exit codes every subcommand shares (answer and decline add 65 and 69), for `--help`.
    static let exitCodes = """
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
    var state: String = "e2ee-filter.sqlite"
    @Option(name: .long, help: "What a push from a sender not in the contacts becomes.")
    var unknownSender: FilterPolicy.UnknownSenderPolicy = .fallback
    @Option(name: .long, help: "Allowed clock skew in milliseconds.")
    var clockSkewMs: Int64 = 30_000
    @Option(
        name: .long,
        help:
            "How long message ids are remembered, in hours (fractions allowed, e.g. 0.05 for 3 minutes in a soak); older messages are `stale`. Finished calls are kept as long."
    )
    var replayRetentionHours: Double = 48
    @Flag(name: .long, help: "Log debug details to stderr (never keys, plaintext or envelopes).")
    var verbose = false

    func validate() throws {
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
            guard let data = FileManager.default.contents(atPath: config) else {
                throw ExitFailure(66, "cannot read --config \(config): check the path")
            }
            struct File: Decodable { var accounts: [FilterAppOptions.Account] }
            do {
                accounts = try JSONDecoder().decode(File.self, from: data).accounts
            } catch {
                throw ExitFailure(
                    64,
                    "--config \(config) is not {\"accounts\":[{\"identity\":...,\"contacts\":...}]}: "
                        + Self.describe(error)
                )
            }
        } else {
            let identity = self.identity ?? ProcessInfo.processInfo.environment["E2EE_IDENTITY_FILE"]!
            guard let contacts = self.contacts else {
                throw ExitFailure(64, "--contacts DIR is required with --identity")
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
        options.policy.clockSkewMs = self.clockSkewMs
        guard self.replayRetentionHours.isFinite, self.replayRetentionHours >= 0.001, self.replayRetentionHours <= 8_760
        else {
            throw ExitFailure(
                64,
                "--replay-retention-hours \(self.replayRetentionHours) is out of range: give 0.001 (3.6 s) to 8760 (a year)"
            )
        }
        options.policy.replayRetentionMs = Int64((self.replayRetentionHours * 3_600_000).rounded())
        #if DEBUG
        // A test hook: a fixed clock. It exists only in debug builds (the shipped, release binary always uses the
        // real clock) and says so on stderr whenever it is used.
        if let value = ProcessInfo.processInfo.environment["E2EE_FILTER_NOW_MS"] {
            if let fixed = Int64(value) {
                writeStderr(
                    Data(
                        ("e2ee-filter: warning: E2EE_FILTER_NOW_MS=\(fixed) replaces the clock "
                            + "(debug builds only, for tests)\n").utf8
                    )
                )
                options.now = { fixed }
            } else {
                writeStderr(
                    Data("e2ee-filter: warning: E2EE_FILTER_NOW_MS is not an integer; the real clock is used\n".utf8)
                )
            }
        }
        #endif
        return options
    }

    /// What is wrong with a `--config` file, for people (never a Swift type dump).
    static func describe(_ error: any Error) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            return
                "\"\(key.stringValue)\" is missing at \(path(context.codingPath).isEmpty ? "the top" : path(context.codingPath))"
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            return "\(path(context.codingPath)) has the wrong type (\(context.debugDescription))"
        case .dataCorrupted(let context)?:
            return "it is not valid JSON (\(context.debugDescription))"
        default:
            return "it cannot be read as JSON"
        }
    }

    func logger() -> Logger {
        var logger = Logger(label: "e2ee-filter") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = self.verbose ? .debug : .warning
        return logger
    }
}

/// An error that ends the process with a given status and a message on stderr.
struct ExitFailure: Error, CustomStringConvertible {
    let status: Int32
    let message: String
    init(_ status: Int32, _ message: String) {
        self.status = status
        self.message = message
    }
    var description: String { self.message }
}

func runMapped(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let failure as ExitFailure {
        writeStderr(Data("e2ee-filter: error: \(failure.message)\n".utf8))
        throw ExitCode(failure.status)
    } catch let error as E2EEError {
        writeStderr(Data("e2ee-filter: error: \(error.message)\n".utf8))
        let status: Int32 =
            switch error.code {
            case .insecureFile, .locked: 77
            // Any other code from loading keys or cards means a key file that cannot be used.
            default: 66
            }
        throw ExitCode(status)
    } catch let error as FilterDaemonError {
        writeStderr(Data("e2ee-filter: error: \(error.message)\n".utf8))
        throw ExitCode(66)
    } catch let error as FilterStateError {
        // The message says which file and what to do; the code, SQLite's result code and the source line are for
        // logs (--verbose), not for people.
        writeStderr(Data("e2ee-filter: error: \(error.message)\n".utf8))
        throw ExitCode(70)
    } catch let error as CallSinkError {
        writeStderr(Data("e2ee-filter: error: \(error.message)\n".utf8))
        throw ExitCode(error.code == .invalidHookCommand ? 64 : 66)
    } catch let error as CallActionError {
        writeStderr(Data("e2ee-filter: error: \(error.message)\n".utf8))
        let status: Int32 =
            switch error.code {
            case .unknownCallUUID: 65
            case .invalidAction: 69
            default: 64
            }
        throw ExitCode(status)
    } catch let exit as ExitCode {
        throw exit
    } catch {
        // Nothing else is expected here; still exit with a documented status, never ArgumentParser's 1.
        writeStderr(
            Data("e2ee-filter: error: unexpected failure (please report it): \(error)\n".utf8)
        )
        throw ExitCode(70)
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
            "This device's push token (hex): spool records and request lines for other tokens are skipped without a decision (one spool shared by several devices)."
    )
    var deviceToken: String?

    func validate() throws {
        if let token = self.deviceToken,
            token.isEmpty || token.count % 2 != 0 || !token.allSatisfy(\.isHexDigit)
        {
            throw ValidationError(
                "--device-token \(token) is not a device token: give this device's token as hex digits (an even number)"
            )
        }
        if let hook = self.hook, hook.allSatisfy(\.isWhitespace) {
            throw ValidationError(
                "--hook is blank: give the shell command to run per call event (it gets the event JSON on stdin), "
                    + "or leave --hook out"
            )
        }
    }

    func run() async throws {
        // A reader that goes away must not kill the daemon mid-batch: writes then fail with EPIPE instead.
        signal(SIGPIPE, SIG_IGN)
        try await runMapped {
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
                writeStderr(Data("e2ee-filter: \(violations) call handoffs were not reported\n".utf8))
                throw ExitFailure(70, "call handoff rule violated")
            }
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
        try await runMapped {
            let options = try self.account.options()
            let bytes: [UInt8]
            if let path = self.payload {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ExitFailure(66, "cannot read --payload \(path)")
                }
                bytes = Array(data)
            } else {
                bytes = readStandardInput()
            }
            let line = Array(bytes.reversed().drop(while: { $0 == 0x0A || $0 == 0x0D }).reversed())
            let parts = try FilterApp.build(options, logger: self.account.logger())
            // Payloads a locked `run` kept are decided (and logged) before this newer one, which would otherwise
            // wait behind them.
            let locked = await parts.engine.isLocked
            if !locked, await parts.engine.hasKeptPayloads {
                _ = try await parts.engine.decideKept()
            }
            let outcome = try await parts.engine.process(
                [PayloadInput.parse(line: line, defaultSeq: 1)],
                deduplicateBySeq: false
            )
            for line in outcome.lines { print(line) }
            if outcome.decisions.isEmpty && outcome.keptWhileLocked > 0 {
                // Keys are locked: the payload is kept for `run` to decide after unlock; show the generic alert.
                var decision = FilterDecision(seq: 1, apnsID: nil, decision: .fallback, reason: .locked)
                decision.alert = FilterDecision.fallbackAlert
                print(decision.jsonLine())
            }
        }
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
        signal(SIGPIPE, SIG_IGN)
        try await runMapped {
            let options = try self.account.options()
            let parts = try FilterApp.build(options, logger: self.account.logger())
            let outcome = try await parts.engine.perform(
                Self.action,
                callID: UUID(uuidString: self.callID)!,
                account: self.accountName
            )
            for line in outcome.requestLines { print(line) }
        }
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

func writeStderr(_ bytes: Data) {
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func readStandardInput() -> [UInt8] {
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        out += buffer[0..<n]
    }
    return out
}

extension FilterPolicy.UnknownSenderPolicy: ExpressibleByArgument {}
