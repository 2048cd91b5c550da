import CLISupport
import Foundation
import Locking
public import Logging

/// Writes each log record as one JSON object on a line (`--log-format json`), for log collectors:
/// `{"level":"info","label":"e2ee-relay","message":"…","source":"Relay","time":"2026-…Z",…metadata}` with the
/// metadata's keys at the top level (a key named like a field above is prefixed `metadata.`), keys sorted.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let write: @Sendable (String) -> Void

    /// - Parameters:
    ///   - label: The logger's label.
    ///   - write: Where each line goes (default: standard error, one `write(2)` per line).
    public init(label: String, write: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object: [String: Any] = [
            "time": Self.timestamp(), "level": event.level.rawValue, "label": self.label,
            "message": event.message.description, "source": event.source,
        ]
        let merged = self.metadata.merging(event.metadata ?? [:]) { $1 }
        for (key, value) in merged {
            object[object[key] == nil ? key : "metadata.\(key)"] = Self.json(value)
        }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        self.write(String(decoding: data, as: UTF8.self) + "\n")
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let value): value.description
        case .array(let values): values.map(Self.json)
        case .dictionary(let values): values.mapValues(Self.json)
        }
    }

    private static func timestamp() -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date())
    }

    private static let lock = PThreadMutex(())

    /// Writes a line to standard error whole (lines of concurrent loggers never interleave).
    public static let standardError: @Sendable (String) -> Void = { line in
        lock.withLock { _ in StandardError.write(line) }
    }
}
