import ArgumentParser

/// `e2ee-gateway`: a local APNs-compatible HTTP/2 + TLS server for tests and the demo.
///
/// Exit codes: 0 success (or graceful shutdown on SIGTERM/SIGINT), 1 the gateway could not start (TLS, bind,
/// spool, configuration), 64 bad arguments, 73 an output file could not be written.
@main
struct GatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2ee-gateway",
        abstract: "A local APNs-compatible HTTP/2 + TLS gateway (tests and demos).",
        discussion: """
            Exit codes: 0 ok or graceful shutdown, 1 cannot start (TLS, bind, spool, configuration), \
            64 bad arguments, 73 cannot write an output file.
            """,
        subcommands: [ServeCommand.self, ProviderKeyCommand.self]
    )
}

/// The documented exit codes.
enum GatewayExit {
    static let cannotStart = ExitCode(1)
    static let usage = ExitCode(64)
    static let cannotCreate = ExitCode(73)
}
