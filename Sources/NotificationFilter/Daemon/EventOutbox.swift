import Locking
public import Logging

/// The durable outlet for call events and notices: each event is first committed to the state file (where a
/// UNIQUE key on (event, account, call) makes a second `ringing` for one call impossible), then written to the
/// events output and handed to the hook. After a crash the daemon writes what the output lacks
/// (``reconcile()``), so no event is lost and none is written twice.
///
/// Between ``beginBatch()`` and ``endBatch()`` (the engine reporting one batch of payloads) events are held and
/// committed in one transaction at the end: one commit per batch, not one per event. A crash before that commit
/// loses no event: the calls they belong to are in the state, and a restart reports them again
/// (``FilterEngine/recoverAfterRestart()``).
public final class EventOutbox: CallEventSink, Sendable {
    let store: FilterStateStore
    let writer: LineWriter?
    let forward: (any CallEventSink)?
    let logger: Logger
    /// How deep in nested batches, and the events held until the outermost one ends.
    private let held = PThreadMutex<(depth: Int, events: [CallEvent])>((0, []))

    /// - Parameters:
    ///   - store: the state file the outbox lives in.
    ///   - eventsPath: the events file (appended, reconciled after a crash), "-" for standard output, nil for none.
    ///   - forward: another sink each new event also goes to (the hook command).
    public init(store: FilterStateStore, eventsPath: String?, forward: (any CallEventSink)?, logger: Logger) throws {
        self.store = store
        self.writer = try eventsPath.map { path throws(FilterError) in
            path == "-" ? LineWriter.standardOutput : try LineWriter.open(path: path)
        }
        self.forward = forward
        self.logger = logger
    }

    /// Records a call event from the provider (CallEventSink), or holds it inside a batch. Never throws: a
    /// failure is logged.
    public func emit(_ event: CallEvent) {
        let isHeld = self.held.withLock { held in
            guard held.depth > 0 else { return false }
            held.events.append(event)
            return true
        }
        if !isHeld { self.recordAll([event]) }
    }

    public func beginBatch() {
        self.held.withLock { $0.depth += 1 }
    }

    public func endBatch() {
        let events = self.held.withLock { held -> [CallEvent] in
            precondition(held.depth > 0, "endBatch() without beginBatch()")
            held.depth -= 1
            guard held.depth == 0 else { return [] }
            defer { held.events = [] }
            return held.events
        }
        if !events.isEmpty { self.recordAll(events) }
    }

    /// Commits `events` in one transaction, then writes and forwards the new ones (a duplicate `ringing` of a
    /// restored call is neither written nor forwarded). A failure is logged for each event.
    private func recordAll(_ events: [CallEvent]) {
        do {
            let lines = events.map { $0.jsonLine() }
            let inserted = try self.store.transaction { tx in
                try zip(events, lines).map { event, line in
                    try tx.appendEvent(
                        event: event.event.rawValue,
                        account: event.account,
                        callID: event.callID,
                        line: line
                    )
                }
            }
            try self.writer?.write(zip(lines, inserted).filter(\.1).map(\.0))
            for (event, isNew) in zip(events, inserted) where isNew { self.forward?.emit(event) }
        } catch {
            for event in events {
                self.logger.error(
                    "call event could not be recorded",
                    metadata: ["event": "\(event.event)", "error": "\(error)"]
                )
            }
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
