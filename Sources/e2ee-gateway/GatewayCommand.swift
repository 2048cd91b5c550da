import ArgumentParser
import CLISupport

/// `e2ee-gateway`: a local APNs-compatible HTTP/2 + TLS server for tests and the demo.
///
/// Exit codes: 0 success (or graceful shutdown on SIGTERM/SIGINT), 1 the gateway could not start (TLS, bind,
/// spool, configuration), 64 bad arguments, 73 an output file could not be written.
@main
struct GatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2ee-gateway",
        abstract: "A local APNs-compatible HTTP/2 + TLS gateway (tests and demos).",
        discussion: "\(GatewayCommand.exitCodes)",
        version: ToolVersion.current,
        subcommands: [ServeCommand.self, ProviderKeyCommand.self]
    )

    /// The exit codes of every subcommand, for `--help` (docs/GATEWAY.md lists the same).
    static let exitCodes = """
        Exit codes: 0 ok or graceful shutdown, 1 cannot start (TLS, bind, spool, sink), 64 bad arguments or \
        configuration, 73 cannot write an output file (the port file, or a key file that already exists).
        """

    static func main() async {
        // A closed stdout (the delivery lines' reader went away) is an EPIPE write error, answered 500 per push
        // and logged, never a SIGPIPE that kills the gateway (runAsTool ignores SIGPIPE).
        await self.runAsTool()
    }
}

/// The documented exit codes.
enum GatewayExit {
    static let cannotStart = ExitCode(1)
    static let usage = ExitCode(64)
    static let cannotCreate = ExitCode(73)
}
