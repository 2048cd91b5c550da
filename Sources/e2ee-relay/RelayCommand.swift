import ArgumentParser
import CLISupport
import Foundation

/// `e2ee-relay`: the app's push server between senders and APNs (docs/RELAY.md).
///
/// Exit codes: 0 success (or graceful shutdown on SIGTERM/SIGINT), 1 the relay could not start (TLS, APNs key,
/// bind), 64 bad arguments or configuration (a flag, an `E2EE_RELAY_*` variable or a `--config` key; a malformed
/// database URL too), 69 the database cannot be opened or reached (PostgreSQL down, SQLite folder missing or not
/// writable, SQLite file locked by another relay).
@main
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2ee-relay",
        abstract: "The push relay: stores signed device lists, queues envelopes, delivers them to APNs.",
        discussion:
            "Exit codes: 0 ok or graceful shutdown, 1 cannot start (TLS, APNs key, bind), 64 bad arguments or "
            + "configuration, 69 the database cannot be opened or reached.",
        version: ToolVersion.current,
        subcommands: [ServeCommand.self]
    )

    static func main() async {
        await self.runAsTool()
    }
}
