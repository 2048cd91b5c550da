public import ArgumentParser

extension AsyncParsableCommand {
    /// The `main` of every executable of the package: SIGPIPE ignored (a reader that goes away, `| head -1`, is an
    /// EPIPE write error with the tool's exit code, not a signal), then the command parsed and run, and a thrown
    /// error mapped by ArgumentParser (`ExitCode`, usage errors 64).
    ///
    /// With a `mapping`, an error the command throws is first turned into the executable's exit status and message
    /// (``ExitMapping``): the commands can live in a library, and the table of exit codes stays in the executable. The
    /// table is also ``ExitMapping/current`` for the run.
    ///
    /// `direct` may read the command line itself and return the work to run, for a command whose cold start matters
    /// (`e2ee-filter once`, launched per push); it returns nil for everything ArgumentParser must parse.
    public static func runAsTool(
        mapping: ExitMapping? = nil,
        direct: ([String]) -> (@Sendable () async throws -> Void)? = { _ in nil }
    ) async {
        Platform.ignoreBrokenPipe()
        do {
            let arguments = Array(CommandLine.arguments.dropFirst())
            let body: () async throws -> Void
            if let work = direct(arguments) {
                body = work
            } else {
                let command = try parseAsRoot(arguments)
                body = { try await Self.run(command) }
            }
            if let mapping {
                try await ExitMapping.$current.withValue(mapping) {
                    try await mapping.run(body)
                }
            } else {
                try await body()
            }
        } catch {
            exit(withError: error)
        }
    }

    private static func run(_ parsed: any ParsableCommand) async throws {
        var command = parsed
        if var asyncCommand = command as? any AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            try command.run()
        }
    }
}
