public import ArgumentParser
public import Logging

/// A log level named on the command line (`--log-level`): swift-log's levels by their names.
///
/// A type of its own rather than a retroactive `ExpressibleByArgument` conformance of `Logger.Level`, which two
/// modules could each declare.
public enum LogLevelName: String, CaseIterable, Sendable, ExpressibleByArgument {
    case trace, debug, info, notice, warning, error, critical

    /// The swift-log level.
    public var level: Logger.Level { Logger.Level(rawValue: self.rawValue)! }
}

extension Logger {
    /// A tool's logger: every line on stderr (stdout carries only machine output), at `level`.
    ///
    /// No `LoggingSystem` bootstrap: its default handler writes to stdout.
    public static func standardError(label: String, level: Logger.Level) -> Logger {
        var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = level
        return logger
    }
}
