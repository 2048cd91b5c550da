import ArgumentParser
import E2EECore
import Foundation
import Sender

/// `e2ee-send`: encrypts messages into uniform APNs requests and prints or delivers them.
///
/// Exit codes (sysexits.h): 0 ok; 64 usage (bad flag or value, bad device token); 65 data (unknown recipient,
/// unreadable card, text too long, bad batch line); 66 missing key file; 69 APNs refused a push; 75 delivery
/// failed for now (timeout, connection, retries exhausted); 77 a secret file is readable by others, or the
/// identity is locked and no passphrase file was given.
@main
struct E2EESend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2ee-send",
        abstract: "Encrypt calls, cancels, texts and receipts into APNs pushes that all look alike.",
        discussion: """
            Secrets come only from files: --identity (or $E2EE_IDENTITY_FILE naming the file), \
            --passphrase-file, --apns-key-file (or $APNS_KEY_PATH). Machine output is one JSON line per push on \
            stdout; messages go to stderr.
            Exit codes: 0 ok, 64 usage, 65 bad data (unknown recipient, bad card, too long), 66 missing key, \
            69 APNs refused, 75 delivery failed for now, 77 insecure or locked key file.
            """,
        subcommands: [
            Keygen.self, Card.self, Rotate.self, Call.self, Cancel.self, Text.self, Receipt.self, Batch.self,
            Deliver.self,
        ]
    )
}

/// Prints `e2ee-send: error: …` on stderr and exits with the error's code.
func fail(_ error: SenderError) -> ExitCode {
    FileHandle.standardError.write(Data("e2ee-send: error: \(error.message)\n".utf8))
    return ExitCode(error.code.exitCode)
}

/// Runs a command body and maps every error to a message on stderr and a documented exit code.
func runCLI(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as SenderError {
        throw fail(error)
    } catch let error as E2EEError {
        throw fail(SenderError(error, context: "e2ee-send"))
    }
}

func printLine(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func note(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
