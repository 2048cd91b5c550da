public import ArgumentParser

/// How an error ends a tool: its exit status and the message for people.
///
/// Exit codes are an executable's API: each executable keeps its own table and turns its libraries' error codes
/// into ``ToolExit`` values in one function (``ExitMapping``); libraries never name an exit status.
public struct ToolExit: Error, Sendable, Hashable, CustomStringConvertible {
    /// The process exit status (sysexits.h values).
    public let status: Int32
    /// What was wrong and what to do, printed as `<tool>: error: <message>`.
    public let message: String

    public init(_ status: Int32, _ message: String) {
        self.status = status
        self.message = message
    }

    public var description: String { self.message }
}

/// The one place a tool turns errors into exit statuses: each error thrown by a command body is printed on stderr
/// as `<tool>: error: <message>` and ends the process with the status ``map`` gives it.
///
/// `ExitCode` (a status already decided, its message already printed), ArgumentParser's `ValidationError` (a
/// usage error, 64) and its other errors (help requested) pass through. An error ``map`` does not know is a bug:
/// exit 70 (EX_SOFTWARE), saying so.
public struct ExitMapping: Sendable {
    /// The tool's name, the prefix of every message.
    public let tool: String
    private let map: @Sendable (any Error) -> ToolExit?

    /// The running tool's table, bound by ``AsyncParsableCommand/runAsTool(mapping:direct:)`` for the whole run: a
    /// command that decides a status in the middle of a run (a batch's failed line) reads it here. Nil outside a
    /// tool's run (a test binds its own).
    @TaskLocal public static var current: ExitMapping?

    /// - Parameters:
    ///   - tool: the executable's name (`e2ee-send`).
    ///   - map: the exit status and message of each error the tool knows; nil for any other.
    public init(tool: String, map: @escaping @Sendable (any Error) -> ToolExit?) {
        self.tool = tool
        self.map = map
    }

    /// The status and message `error` ends the tool with.
    public func exit(for error: any Error) -> ToolExit {
        if let known = error as? ToolExit { return known }
        return self.map(error) ?? ToolExit(70, "unexpected error (please report it): \(error)")
    }

    /// Prints `<tool>: error: <message>` on stderr and returns the exit code to throw.
    public func fail(_ error: any Error) -> ExitCode {
        let exit = self.exit(for: error)
        StandardError.writeLine("\(self.tool): error: \(exit.message)")
        return ExitCode(exit.status)
    }

    /// `ExitCode`, `ValidationError`, `CleanExit` and the parser's own errors (a root command's default `run` asks
    /// for help with one whose type is internal to ArgumentParser): ArgumentParser prints and maps them itself.
    private static func isArgumentParsers(_ error: any Error) -> Bool {
        error is ExitCode || error is ValidationError || error is CleanExit
            || String(reflecting: type(of: error)).hasPrefix("ArgumentParser.")
    }

    /// Runs a command body; every error becomes a message on stderr and a documented exit code.
    public func run(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch  where Self.isArgumentParsers(error) {
            throw error
        } catch {
            throw self.fail(error)
        }
    }
}
