public import ArgumentParser

extension AsyncParsableCommand {
    /// The `main` of every executable of the package: SIGPIPE ignored (a reader that goes away, `| head -1`, is an
    /// EPIPE write error with the tool's exit code, not a signal), then the command parsed and run, and a thrown
    /// error mapped by ArgumentParser (`ExitCode`, usage errors 64).
    public static func runAsTool() async {
        Platform.ignoreBrokenPipe()
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
