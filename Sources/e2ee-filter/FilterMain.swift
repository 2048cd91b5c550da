import CLISupport
import E2EECore
import FilterCommandLine
import NotificationFilter

/// `e2ee-filter`: the device side (the commands are `FilterCommandLine`'s). Exit codes: 0 ok (also after SIGTERM);
/// 64 usage; 65 answer or decline: no call with that id rang on this device; 66 a key, contacts, card or spool file
/// is missing, unreadable or does not fit; 69 answer or decline: the call is no longer ringing; 70 the state file
/// cannot be used, or another internal failure; 77 a secret file is readable by others.
@main
enum FilterMain {
    static func main() async {
        await E2EEFilter.runAsTool(mapping: FilterExit.mapping, direct: E2EEFilter.direct)
    }
}

/// The exit status of each error (the one table; exit codes are the tool's API, not the library's).
enum FilterExit {
    static let mapping = ExitMapping(tool: "e2ee-filter") { error in
        switch error {
        case let error as E2EEError:
            // Any code from loading keys or cards other than these means a key file that cannot be used.
            return ToolExit(error.code == .insecureFile || error.code == .locked ? 77 : 66, error.message)
        case let error as FilterError:
            // The message says which file and what to do; the code, SQLite's result code and the source line are
            // for logs (--verbose), not for people.
            return ToolExit(Self.status(error.code), error.message)
        default:
            return nil
        }
    }

    static func status(_ code: FilterError.Code) -> Int32 {
        switch code {
        case .unknownCallUUID: 65
        case .invalidAction: 69
        case .unknownAccount, .invalidHookCommand, .configInvalid: 64
        case .unusableFile, .cannotOpen, .configUnreadable: 66
        default: 70  // the state file cannot be used, or another internal failure
        }
    }
}
