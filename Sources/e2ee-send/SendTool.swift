import CLISupport
import E2EECore
import SendCommandLine
import Sender

/// `e2ee-send`: encrypts messages into uniform APNs requests and prints them, submits them to the app's relay
/// (`--relay`), or delivers them to APNs (`--deliver`).
///
/// Exit codes (sysexits.h), mapped in one place (``SendExit``): 0 ok; 64 usage (bad flag or value, bad device
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
///
/// The commands are `SendCommandLine`'s ``E2EESend``; this executable keeps only `main` and the table.
@main
enum SendTool {
    static func main() async {
        await E2EESend.runAsTool(mapping: SendExit.mapping)
    }
}

/// The exit status of each of the Sender's error codes (sysexits.h): the one table, here in the executable (exit
/// codes are the tool's API, not the library's).
enum SendExit {
    static func status(_ code: SenderError.Code) -> Int32 {
        // sysexits.h: 64 EX_USAGE, 65 EX_DATAERR, 66 EX_NOINPUT, 69 EX_UNAVAILABLE, 70 EX_SOFTWARE, 73 EX_CANTCREAT,
        // 74 EX_IOERR, 75 EX_TEMPFAIL, 76 EX_PROTOCOL, 77 EX_NOPERM.
        switch code {
        case .usage, .badDeviceToken, .invalidConfiguration, .trustedCAUnreadable, .registryFileUnreadable,
            .registryFileUnwritable:
            64
        case .unknownRecipient, .unsupportedPushService, .unreadableCard, .malformedList, .tooLarge, .badRequest,
            .unreadablePins:
            65
        case .missingKey, .keyFileUnreadable, .keyEnvironmentVariableMissing, .keyInvalid: 66
        case .rejected, .relayRefused: 69
        case .cannotCreate: 73
        case .outputFailed: 74
        case .deliveryFailed, .relayUnavailable: 75
        case _ where SenderError.Code.listRefusals.contains(code): 76
        case .insecureKey, .keyFileTooOpen, .deliveryTokenRefused: 77
        case .untrustedCertificate: 78
        case .relayOutcomeUnknown: 79
        default: 70  // .internalError, and a code this table does not know yet
        }
    }

    /// How every command's errors end the process: `e2ee-send: error: <message>` and the code's status.
    static let mapping = ExitMapping(tool: "e2ee-send") { error in
        switch error {
        case let error as SenderError:
            return ToolExit(Self.status(error.code), error.message)
        case let error as E2EEError:
            let mapped = SenderError(error, context: "e2ee-send")
            return ToolExit(Self.status(mapped.code), mapped.message)
        case let error as OutputError:
            return ToolExit(Self.status(.outputFailed), error.message)
        default:
            return nil
        }
    }
}
