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
    /// The subcommands in `direct` are parsed without the others (``parseAsRoot(_:direct:)``).
    public static func runAsTool(mapping: ExitMapping? = nil, direct: [any ParsableCommand.Type] = []) async {
        Platform.ignoreBrokenPipe()
        do {
            let command = try Self.parseAsRoot(Array(CommandLine.arguments.dropFirst()), direct: direct)
            if let mapping {
                try await ExitMapping.$current.withValue(mapping) {
                    try await mapping.run { try await Self.run(command) }
                }
            } else {
                try await Self.run(command)
            }
        } catch {
            exit(withError: error)
        }
    }

    /// Parses `arguments` as the root command does, except that a subcommand named first and listed in `direct` is
    /// parsed alone, without the tree of every command.
    ///
    /// Why: a process launched per push (`e2ee-filter once`, as a notification service extension is) pays the whole
    /// tree on every start, in type metadata and protocol-conformance lookups that are a large part of its cold
    /// start. A type in `direct` must name itself (`CommandConfiguration.commandName`) and take no option from its
    /// parents. Whatever the direct parse refuses or turns into another command (a usage error, `--help`) goes through the full parse, so the
    /// command, its errors and its help are exactly what they would be without the shortcut.
    public static func parseAsRoot(
        _ arguments: [String],
        direct: [any ParsableCommand.Type]
    ) throws -> any ParsableCommand {
        if let name = arguments.first,
            let type = direct.first(where: { $0.configuration.commandName == name }),
            let command = try? type.parseAsRoot(Array(arguments.dropFirst())),
            // `--help` parses to ArgumentParser's help command, whose usage line would lack the root's name.
            Swift.type(of: command) == type
        {
            return command
        }
        return try parseAsRoot(arguments)
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
