public import InMemoryLogging
public import Logging

/// A logger whose records stay in memory (swift-log's `InMemoryLogHandler`), for tests that check what is logged,
/// above all that no secret is.
///
/// ``lines`` renders each record with every field a secret could hide in: level, message, all metadata (handler,
/// provider and call site, merged by the handler) and the attached error, both as described and as reflected.
public struct LogCapture: Sendable {
    /// The handler every copy of ``logger`` writes to.
    public let handler: InMemoryLogHandler
    /// A logger at `level` (default `.trace`: everything) recording into ``handler``.
    public let logger: Logger

    /// - Parameters:
    ///   - label: The logger's label.
    ///   - level: The logger's level (default `.trace`).
    public init(label: String = "test", level: Logger.Level = .trace) {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: label) { _ in handler }
        logger.logLevel = level
        self.handler = handler
        self.logger = logger
    }

    /// The records so far.
    public var entries: [InMemoryLogHandler.Entry] { self.handler.entries }

    /// The records so far, one line each: `<level> <message> [<key>=<value> ...]` and ` error=<description>
    /// <reflection>` when an error is attached. Metadata keys are sorted.
    public var lines: [String] {
        self.entries.map { entry in
            let fields = entry.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                .joined(separator: " ")
            let error = entry.error.map { " error=\(String(describing: $0)) \(String(reflecting: $0))" } ?? ""
            return "\(entry.level) \(entry.message) [\(fields)]\(error)"
        }
    }

    /// ``lines`` joined with newlines.
    public var text: String { self.lines.joined(separator: "\n") }
}
