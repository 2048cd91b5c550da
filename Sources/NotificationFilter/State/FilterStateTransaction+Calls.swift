#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension FilterStateTransaction {
    // MARK: Cancels before invites

    /// Remembers a cancel whose invite has not arrived yet; a later cancel for the same call replaces it.
    ///
    /// - Throws: ``FilterStateError`` on a SQLite failure.
    public func recordEarlyCancel(_ record: EarlyCancelRecord) throws(FilterStateError) {
        try database.withStatement(
            "INSERT OR REPLACE INTO early_cancel (account, call_id, reason, at_ms) VALUES (?1, ?2, ?3, ?4)"
        ) { statement throws(FilterStateError) in
            try statement.bind(record.account, at: 1)
            try statement.bind(record.callID.uuidString, at: 2)
            try statement.bind(record.reason, at: 3)
            try statement.bind(record.atMs, at: 4)
            try statement.run()
        }
    }

    /// Removes and returns the cancel waiting for this call's invite, if one arrived first.
    ///
    /// - Returns: The cancel, or nil; a second call for the same id returns nil.
    /// - Throws: ``FilterStateError`` on a SQLite failure.
    public func consumeEarlyCancel(account: String, callID: UUID) throws(FilterStateError) -> EarlyCancelRecord? {
        let found = try database.withStatement(
            "SELECT reason, at_ms FROM early_cancel WHERE account = ?1 AND call_id = ?2"
        ) { statement throws(FilterStateError) -> EarlyCancelRecord? in
            try statement.bind(account, at: 1)
            try statement.bind(callID.uuidString, at: 2)
            guard try statement.step() else { return nil }
            return EarlyCancelRecord(
                account: account,
                callID: callID,
                reason: statement.text(0),
                atMs: statement.int64(1)
            )
        }
        guard let found else { return nil }
        try database.withStatement("DELETE FROM early_cancel WHERE account = ?1 AND call_id = ?2") {
            statement throws(FilterStateError) in
            try statement.bind(account, at: 1)
            try statement.bind(callID.uuidString, at: 2)
            try statement.run()
        }
        return found
    }

    /// Forgets cancels that waited since before `olderThanMs` for an invite that never came.
    ///
    /// - Returns: How many cancels were forgotten.
    /// - Throws: ``FilterStateError`` on a SQLite failure.
    @discardableResult
    public func pruneEarlyCancels(olderThanMs: Int64) throws(FilterStateError) -> Int {
        try database.withStatement("DELETE FROM early_cancel WHERE at_ms < ?1") { statement throws(FilterStateError) in
            try statement.bind(olderThanMs, at: 1)
            try statement.run()
            return database.changes
        }
    }

    // MARK: Missed-call log

    /// Logs a missed call once; returns false if this call was already logged as missed.
    ///
    /// - Throws: ``FilterStateError`` on a SQLite failure.
    @discardableResult
    public func recordMissedCall(_ record: MissedCallRecord) throws(FilterStateError) -> Bool {
        try database.withStatement(
            """
            INSERT OR IGNORE INTO missed_call (account, call_id, caller_handle, display_name, at_ms, reason)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            """
        ) { statement throws(FilterStateError) in
            try statement.bind(record.account, at: 1)
            try statement.bind(record.callID.uuidString, at: 2)
            try statement.bind(record.callerHandle, at: 3)
            try statement.bind(record.displayName, at: 4)
            try statement.bind(record.atMs, at: 5)
            try statement.bind(record.reason, at: 6)
            try statement.run()
            return database.changes == 1
        }
    }

    /// The missed-call log, oldest first, for one account or (nil) all of them.
    ///
    /// - Throws: ``FilterStateError`` on a SQLite failure.
    public func missedCalls(account: String? = nil) throws(FilterStateError) -> [MissedCallRecord] {
        try database.withStatement(
            """
            SELECT account, call_id, caller_handle, display_name, at_ms, reason FROM missed_call
            WHERE ?1 IS NULL OR account = ?1 ORDER BY at_ms, account, call_id
            """
        ) { statement throws(FilterStateError) in
            try statement.bind(account, at: 1)
            var records: [MissedCallRecord] = []
            while try statement.step() {
                guard let callID = UUID(uuidString: statement.text(1)) else { continue }
                records.append(
                    MissedCallRecord(
                        account: statement.text(0),
                        callID: callID,
                        callerHandle: statement.optionalText(2),
                        displayName: statement.optionalText(3),
                        atMs: statement.int64(4),
                        reason: statement.text(5)
                    )
                )
            }
            return records
        }
    }
}
