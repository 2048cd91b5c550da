public import ArgumentParser

extension AsyncParsableCommand {
    /// The `main` of every executable of the package: SIGPIPE ignored (a reader that goes away, `| head -1`, is an
    /// EPIPE write error with the tool's exit code, not a signal), then the command parsed and run, and a thrown
    /// error mapped by ArgumentParser (`ExitCode`, usage errors 64).
    ///
    /// With a `mapping`, an error the command throws is first turned into the executable's exit status and message
    /// (``ExitMapping``): the commands can live in a library, and the table of exit codes stays in the executable.
    public static func runAsTool(mapping: ExitMapping? = nil) async {
        Platform.ignoreBrokenPipe()
        do {
            let command = try parseAsRoot()
            if let mapping {
                try await mapping.run { try await Self.run(command) }
            } else {
                try await Self.run(command)
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
