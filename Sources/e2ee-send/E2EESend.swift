import ArgumentParser
import CLISupport
import E2EECore
import Foundation
import Sender

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `e2ee-send`: encrypts messages into uniform APNs requests and prints them, submits them to the app's relay
/// (`--relay`), or delivers them to APNs (`--deliver`).
///
/// Exit codes (sysexits.h), mapped in one place (``runCLI(_:)``): 0 ok; 64 usage (bad flag or value, bad device
/// token); 65 data (unknown recipient, unreadable card, too large, bad batch line, no device reachable through the
/// relay); 66 missing key file (or no delivery token file); 69 APNs refused a push, or the relay refused a submit
/// (relay-refused); 70 internal error (a bug: please report it); 73 cannot create an output file or folder; 74
/// standard output could not be written (closed pipe); 75 delivery failed for now (timeout, connection, retries
/// exhausted; relay-unavailable: the relay could not be reached, rate limited or could not store); 76 a recipient's device list was refused (signing key changed, rollback, version reused, a device not
/// signed in, bad list signature: nothing was sent to that user); 77 a secret file is readable by others, or the
/// identity is locked and no passphrase file was given, or the relay refused the delivery token
/// (delivery-token-refused); 78 a server's TLS certificate does not verify against --relay-ca/--apns-ca (or the system
/// roots): a configuration error, nothing sent; 79 relay-outcome-unknown: a submit reached the relay and no answer
/// came, even after retrying with the same idempotency key (the relay may have queued it).
@main
struct E2EESend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
            fingerprint printed to compare. The APNs topic is each device's push.topic unless --topic (or \
            $E2EE_TOPIC) overrides it.
            \(E2EESend.exitCodes)
            """,
        version: ToolVersion.current,
        subcommands: [
            Keygen.self, Device.self, Contact.self, Card.self, Rotate.self, Call.self, Cancel.self, Text.self,
            Receipt.self, Batch.self, Deliver.self, RelayCommands.self,
        ]
    )

    /// The exit codes of every command (`--help` of each lists them; mapped in one place, ``runCLI(_:)``).
    static let exitCodes = """
        Exit codes: 0 ok (a message to your own user with nothing to send to is ok too, with a note), 64 usage, 65 \
        bad data (unknown recipient, a device list that is not well formed: malformed-list, too large, bad batch \
        line, no device reachable through the relay), 66 missing key or delivery token file, 69 APNs refused (or \
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

    static func main() async {
        // A reader that goes away (`| head -1`) must be an EPIPE write error with its exit code, not a signal.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

/// Prints `e2ee-send: error: …` on stderr and returns the error's exit code.
func fail(_ error: SenderError) -> ExitCode {
    note("e2ee-send: error: \(error.message)")
    return ExitCode(error.code.exitCode)
}

/// Runs a command body and maps every error to a message on stderr and a documented exit code: the one place
/// where errors become exit codes.
func runCLI(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as SenderError {
        throw fail(error)
    } catch let error as E2EEError {
        throw fail(SenderError(error, context: "e2ee-send"))
    } catch let error as ExitCode {
        throw error
    } catch let error as ValidationError {
        throw error
    } catch let error as CocoaError {
        let path = (error.userInfo[NSFilePathErrorKey] as? String).map { " \($0)" } ?? ""
        throw fail(
            SenderError(.cannotCreate, "cannot create\(path): \(error.localizedDescription); check the path and rights")
        )
    } catch {
        throw fail(SenderError(.internalError, "unexpected error (please report it): \(error)"))
    }
}

/// Standard output, written with write(2): a closed pipe (EPIPE) or a full disk is a ``SenderError`` with code
/// `.outputFailed` (exit 74), never a crash.
enum StandardOutput {
    static func write(_ bytes: some Collection<UInt8>) throws(SenderError) {
        let data = Array(bytes)
        var offset = 0
        while offset < data.count {
            let written = data.withUnsafeBytes { buffer in
                #if canImport(Glibc)
                Glibc.write(1, buffer.baseAddress! + offset, buffer.count - offset)
                #else
                Darwin.write(1, buffer.baseAddress! + offset, buffer.count - offset)
                #endif
            }
            if written < 0 {
                if errno == EINTR { continue }
                let reason = errno == EPIPE ? "the reader closed the pipe" : String(cString: strerror(errno))
                throw SenderError(.outputFailed, "cannot write to standard output (\(reason))")
            }
            offset += written
        }
    }

    static func writeLine(_ line: String) throws(SenderError) {
        try self.write(Array((line + "\n").utf8))
    }
}

func printLine(_ line: String) throws(SenderError) {
    try StandardOutput.writeLine(line)
}

/// A message for people on stderr; a closed stderr is ignored (there is nowhere left to say it).
func note(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { buffer in
        #if canImport(Glibc)
        Glibc.write(2, buffer.baseAddress!, buffer.count)
        #else
        Darwin.write(2, buffer.baseAddress!, buffer.count)
        #endif
    }
}

/// Ends a pipeline run: reports an output failure (which wins: the caller has lost results) or the first failed
/// line, with its exit code.
func finish(_ summary: PipelineSummary) throws {
    if let outputError = summary.outputError {
        note(
            "e2ee-send: error: \(outputError.message); \(summary.unwritten) of \(summary.lines) result lines were "
                + "not written (the pushes asked for were still sent)"
        )
        throw ExitCode(outputError.code.exitCode)
    }
    if let failure = summary.firstFailure, let line = summary.firstFailureLine {
        note(
            "e2ee-send: error: line \(line): \(failure.message) (\(summary.failures) of \(summary.lines) lines failed)"
        )
        throw ExitCode(failure.code.exitCode)
    }
}
