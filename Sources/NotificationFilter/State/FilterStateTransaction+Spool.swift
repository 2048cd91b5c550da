extension FilterStateTransaction {
    // MARK: Decision log

    /// Records the decision line for input `seq`; returns false if that input was already decided.
    ///
    /// A restarted daemon asks ``decision(forSeq:)`` first and re-emits the stored line instead of
    /// deciding again, so each input is decided exactly once.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    @discardableResult
    public func recordDecision(seq: Int64, line: String) throws(FilterError) -> Bool {
        try database.withStatement("INSERT OR IGNORE INTO decision_log (seq, line) VALUES (?1, ?2)") {
            statement throws(FilterError) in
            try statement.bind(seq, at: 1)
            try statement.bind(line, at: 2)
            try statement.run()
            return database.changes == 1
        }
    }

    /// The decision line already recorded for input `seq`, or nil if it was not decided yet.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func decision(forSeq seq: Int64) throws(FilterError) -> String? {
        try database.withStatement("SELECT line FROM decision_log WHERE seq = ?1") {
            statement throws(FilterError) in
            try statement.bind(seq, at: 1)
            return try statement.step() ? statement.text(0) : nil
        }
    }

    /// The highest decided input sequence number, or nil if nothing was decided.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func lastDecidedSeq() throws(FilterError) -> Int64? {
        try database.withStatement("SELECT max(seq) FROM decision_log") { statement throws(FilterError) in
            guard try statement.step(), !statement.isNull(0) else { return nil }
            return statement.int64(0)
        }
    }

    // MARK: Spool progress

    /// How far the spool at `path` has been read, or nil if it was never read.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func spoolProgress(path: String) throws(FilterError) -> SpoolProgress? {
        try database.withStatement("SELECT byte_offset, last_seq FROM spool_progress WHERE path = ?1") {
            statement throws(FilterError) in
            try statement.bind(path, at: 1)
            guard try statement.step() else { return nil }
            return SpoolProgress(byteOffset: statement.int64(0), lastSeq: statement.int64(1))
        }
    }

    /// Records how far the spool at `path` has been read.
    ///
    /// - Throws: ``FilterError`` `.invalidArgument` for a negative offset, or a SQLite failure.
    public func setSpoolProgress(path: String, _ progress: SpoolProgress) throws(FilterError) {
        guard progress.byteOffset >= 0 else {
            throw .invalidArgument("a spool offset cannot be negative (\(progress.byteOffset))")
        }
        try database.withStatement(
            """
            INSERT INTO spool_progress (path, byte_offset, last_seq) VALUES (?1, ?2, ?3)
            ON CONFLICT (path) DO UPDATE SET byte_offset = excluded.byte_offset, last_seq = excluded.last_seq
            """
        ) { statement throws(FilterError) in
            try statement.bind(path, at: 1)
            try statement.bind(progress.byteOffset, at: 2)
            try statement.bind(progress.lastSeq, at: 3)
            try statement.run()
        }
    }

    // MARK: Payloads pending while keys are locked

    /// Keeps a payload for after unlock; returns false if a payload with this `seq` is already kept.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    @discardableResult
    public func enqueuePending(seq: Int64, payload: String, atMs: Int64) throws(FilterError) -> Bool {
        try database.withStatement(
            "INSERT OR IGNORE INTO pending_payload (seq, payload, enqueued_at_ms) VALUES (?1, ?2, ?3)"
        ) { statement throws(FilterError) in
            try statement.bind(seq, at: 1)
            try statement.bind(payload, at: 2)
            try statement.bind(atMs, at: 3)
            try statement.run()
            return database.changes == 1
        }
    }

    /// The kept payloads in input order (lowest `seq` first), at most `limit` of them.
    ///
    /// Draining reads a batch, decides each payload and deletes it with ``deletePending(seq:)`` in the
    /// same transaction as its decision, so a crash never loses or doubles one.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func pendingPayloads(limit: Int = 100) throws(FilterError) -> [PendingPayload] {
        try database.withStatement(
            "SELECT seq, payload, enqueued_at_ms FROM pending_payload ORDER BY seq LIMIT ?1"
        ) { statement throws(FilterError) in
            try statement.bind(Int64(max(0, limit)), at: 1)
            var payloads: [PendingPayload] = []
            while try statement.step() {
                payloads.append(
                    PendingPayload(
                        seq: statement.int64(0),
                        payload: statement.text(1),
                        enqueuedAtMs: statement.int64(2)
                    )
                )
            }
            return payloads
        }
    }

    /// Removes a kept payload once it has been decided; returns false if it was not kept.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    @discardableResult
    public func deletePending(seq: Int64) throws(FilterError) -> Bool {
        try database.withStatement("DELETE FROM pending_payload WHERE seq = ?1") { statement throws(FilterError) in
            try statement.bind(seq, at: 1)
            try statement.run()
            return database.changes == 1
        }
    }

    /// How many payloads are kept.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func pendingCount() throws(FilterError) -> Int {
        try database.withStatement("SELECT count(*) FROM pending_payload") { statement throws(FilterError) in
            try statement.step() ? Int(statement.int64(0)) : 0
        }
    }
}
