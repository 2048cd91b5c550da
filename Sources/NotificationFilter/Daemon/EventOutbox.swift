public import Logging

/// The durable outlet for call events and notices: each event is first committed to the state file (where a
/// UNIQUE key on (event, account, call) makes a second `ringing` for one call impossible), then written to the
/// events output and handed to the hook. After a crash the daemon writes what the output lacks
/// (``reconcile()``), so no event is lost and none is written twice.
public final class EventOutbox: CallEventSink, Sendable {
    let store: FilterStateStore
    let writer: LineWriter?
    let forward: (any CallEventSink)?
    let logger: Logger

    /// - Parameters:
    ///   - store: the state file the outbox lives in.
    ///   - eventsPath: the events file (appended, reconciled after a crash), "-" for standard output, nil for none.
    ///   - forward: another sink each new event also goes to (the hook command).
    public init(store: FilterStateStore, eventsPath: String?, forward: (any CallEventSink)?, logger: Logger) throws {
        self.store = store
        self.writer = try eventsPath.map { path throws(FilterDaemonError) in
            path == "-" ? LineWriter.standardOutput : try LineWriter.open(path: path)
        }
        self.forward = forward
        self.logger = logger
    }

    /// Records a call event from the provider (CallEventSink). Never throws: a failure is logged.
    public func emit(_ event: CallEvent) {
        do {
            if try self.record(
                event: event.event.rawValue,
                account: event.account,
                callID: event.callID,
                line: event.jsonLine()
            ) {
                self.forward?.emit(event)
            }
        } catch {
            self.logger.error(
                "call event could not be recorded",
                metadata: ["event": "\(event.event)", "error": "\(error)"]
            )
        }
    }

    /// Records one event line. Returns false (and writes nothing) for a duplicate.
    @discardableResult
    public func record(event: String, account: String, callID: String, line: String) throws -> Bool {
        let inserted = try self.store.transaction { tx in
            try tx.appendEvent(event: event, account: account, callID: callID, line: line)
        }
        if inserted { try self.writer?.write([line]) }
        return inserted
    }

    /// Writes the events committed but missing from the events file (after a crash).
    func reconcile() throws {
        guard let writer = self.writer, writer.path != nil else { return }
        let written = writer.lineCount()
        // The file holds every event ever written, the outbox only those not pruned since.
        let missing = try self.store.transaction { tx in
            try tx.eventLines(after: max(0, written - tx.prunedEventCount()))
        }
        try writer.write(missing)
    }
}
