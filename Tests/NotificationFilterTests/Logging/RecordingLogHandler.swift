import Logging
import Synchronization

/// Every log record a ``RecordingLogHandler`` saw, rendered as text: level, message, metadata (handler, provider
/// and call-site metadata merged), source and the attached error.
final class LogRecords: Sendable {
    private let records = Mutex<[String]>([])

    func append(_ record: String) { self.records.withLock { $0.append(record) } }
    var all: [String] { self.records.withLock { $0 } }
}

/// A `LogHandler` that keeps every record in memory, at `.trace` level by default.
struct RecordingLogHandler: LogHandler {
    let records: LogRecords
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .trace

    init(records: LogRecords) { self.records = records }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = self.metadata
        if let provided = self.metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let metadata = event.metadata { merged.merge(metadata) { $1 } }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let error = event.error.map { " error=\(String(describing: $0)) \(String(reflecting: $0))" } ?? ""
        self.records.append("\(event.level) \(event.message) [\(fields)] source=\(event.source)\(error)")
    }

    /// A logger at `.trace` that records into `records`.
    static func logger(_ records: LogRecords, label: String = "fp-test") -> Logger {
        var logger = Logger(label: label) { _ in RecordingLogHandler(records: records) }
        logger.logLevel = .trace
        return logger
    }
}
