public import ArgumentParser
import CLISupport
import E2EECore
import Foundation
import Sender

/// `e2ee-send`'s root command: encrypts messages into uniform APNs requests and prints them, submits them to the
/// app's relay (`--relay`), or delivers them to APNs (`--deliver`). The executable runs it with its table of exit
/// codes (`runAsTool(mapping:)`); tests parse and run it in process.
public struct E2EESend: AsyncParsableCommand, Sendable {
    public static let configuration = CommandConfiguration(
        commandName: "e2ee-send",
        abstract: "Encrypt calls, cancels, texts and receipts into APNs pushes that all look alike.",
        discussion: """
            The normal way to send is --relay https://host:port (the app's push server, e2ee-relay): the \
            recipient's signed device list is fetched from the relay and checked against your pins like a card, \
            one envelope is sealed per device the relay can deliver to (a device whose push address is \
            unregistered or none is skipped, and its result line says so), and they are submitted with the \
            recipient's delivery token (<contacts>/<user id>.delivery-token or --delivery-token-file, mode 0600). \
            No APNs key is needed. --deliver sends to APNs directly (a server holding the APNs key); without \
            either, the APNs requests are printed.
            Secrets come only from files: --identity (or $E2EE_IDENTITY_FILE naming the file), \
            --passphrase-file, --apns-key-file (or $APNS_KEY_PATH). Machine output is one JSON line per push on \
            stdout; messages go to stderr. A message to a user is sealed once per device of the user's signed \
            device list (one line per device, naming "device"); a message to your own user goes to every device of \
            it, this one included (it silences its own echo), so it looks like anyone's. The list's user key \
            is pinned on first use (--pins, $E2EE_PINS_FILE, else pins.json next to the identity) and the \
            fingerprint printed to compare. The APNs topic is the topic of each device's APNs push address unless --topic (or \
            $E2EE_TOPIC) overrides it.
            \(E2EESend.exitCodes)
            """,
        version: ToolVersion.current,
        subcommands: [Keygen.self, Device.self, Contact.self, Card.self, Rotate.self] + messageCommands + [
            Batch.self, Deliver.self, RelayCommands.self,
        ]
    )

    /// The exit codes of every command (`--help` of each lists them; the executable's table gives them).
    static let exitCodes = """
        Exit codes: 0 ok (a message to your own user with nothing to send to is ok too, with a note), 64 usage, 65 \
        bad data (unknown recipient, a push service this sender does not deliver through, a device list that is \
        not well formed: malformed-list, too large, bad batch line, no device reachable through the relay), 66 missing key or delivery token file, 69 APNs refused (or \
        relay-refused: the relay refused the request; nothing was queued or stored), 70 internal error, 73 cannot \
        create a file, 74 cannot write stdout (a closed pipe: pushes asked for are still delivered), 75 delivery \
        failed for now (or relay-unavailable: send again later), 76 the recipient's device list was refused \
        (signing-key-changed: compare fingerprints, then `contact accept`; list-rollback: `contact fetch` the \
        current list; list-version-reused, device-not-signed-in, bad-list-signature, user-id-mismatch: do not \
        send, get a fresh card), 77 insecure or locked key file, or delivery-token-refused (ask the recipient for \
        a current delivery token), 78 untrusted-certificate: the relay's or APNs' TLS certificate does not verify \
        against --relay-ca / --apns-ca (or the system roots); nothing was sent: fix the option the message names, 79 \
        relay-outcome-unknown: the submit reached the relay and no answer came, even after retrying with the same \
        idempotency key; the relay may have queued it: send the same message again (same message id) once the relay \
        answers, and the recipient's device silences the copy.
        """

    /// How every command's errors end the process: `e2ee-send: error: <message>` and the status of the
    /// executable's table, ``ExitMapping/current`` (exit codes are the tool's API, not the library's). Unbound,
    /// every error is 70 (a mapping that knows no error).
    static var exitMapping: ExitMapping {
        ExitMapping.current ?? ExitMapping(tool: "e2ee-send") { _ in nil }
    }

    public init() {}

    /// The exit code of a failed result, once its message is printed: its status in ``exitMapping``.
    static func exitCode(_ error: SenderError) -> ExitCode {
        ExitCode(Self.exitMapping.exit(for: error).status)
    }
}

/// Runs a command body: every error becomes a message on stderr and a documented exit code
/// (``E2EESend/exitMapping``).
func runCLI(_ body: () async throws -> Void) async throws {
    try await E2EESend.exitMapping.run(body)
}

/// Writes a line to standard output; a closed pipe or full disk is `.outputFailed` (exit 74).
func printLine(_ line: String) throws(SenderError) {
    do {
        try StandardOutput.writeLine(line)
    } catch {
        throw SenderError(.outputFailed, error.message)
    }
}

/// Writes bytes to standard output, as ``printLine(_:)``.
func printBytes(_ bytes: [UInt8]) throws(SenderError) {
    do {
        try StandardOutput.write(bytes)
    } catch {
        throw SenderError(.outputFailed, error.message)
    }
}

/// A message for people on stderr.
func note(_ text: String) {
    StandardError.writeLine(text)
}

/// Ends a pipeline run: reports an output failure (which wins: the caller has lost results) or the first failed
/// line, with its exit code.
func finish(_ summary: PipelineSummary) throws {
    if let outputError = summary.outputError {
        note(
            "e2ee-send: error: \(outputError.message); \(summary.unwritten) of \(summary.lines) result lines were "
                + "not written (the pushes asked for were still sent)"
        )
        throw E2EESend.exitCode(outputError)
    }
    if let failure = summary.firstFailure, let line = summary.firstFailureLine {
        note(
            "e2ee-send: error: line \(line): \(failure.message) (\(summary.failures) of \(summary.lines) lines failed)"
        )
        throw E2EESend.exitCode(failure)
    }
}
