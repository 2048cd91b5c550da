#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension FilterStateTransaction {
    // MARK: Cancels before invites

    /// Remembers a cancel whose invite has not arrived yet; a later cancel for the same call from the same sender
    /// replaces it (cancels from different senders are kept apart: only the inviter's counts).
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func recordEarlyCancel(_ record: EarlyCancelRecord) throws(FilterError) {
        try database.withStatement(
            """
            INSERT OR REPLACE INTO early_cancel (account, call_id, sender, reason, at_ms) VALUES (?1, ?2, ?3, ?4, ?5)
            """
        ) { statement throws(FilterError) in
            try statement.bind(record.account, at: 1)
            try statement.bind(record.callID.uuidText, at: 2)
            try statement.bind(record.senderUserID ?? "", at: 3)
            try statement.bind(record.reason.rawValue, at: 4)
            try statement.bind(record.atMs, at: 5)
            try statement.run()
        }
    }

    /// Removes the cancels waiting for this call's invite and returns the one `caller` sent, if one arrived first.
    ///
    /// A cancel from another user does not cancel the invite (it is removed all the same: the invite is here).
    ///
    /// - Parameters:
    ///   - account: The receiving account.
    ///   - callID: The call of the invite.
    ///   - caller: The user id that sent the invite.
    /// - Returns: The caller's cancel (or one stored without a sender), or nil; a second call returns nil.
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func consumeEarlyCancel(
        account: String,
        callID: UUID,
        caller: String
    ) throws(FilterError) -> EarlyCancelRecord? {
        let found = try database.withStatement(
            """
            SELECT reason, at_ms, sender FROM early_cancel WHERE account = ?1 AND call_id = ?2 AND sender IN (?3, '')
            ORDER BY sender DESC LIMIT 1
            """
        ) { statement throws(FilterError) -> EarlyCancelRecord? in
            try statement.bind(account, at: 1)
            try statement.bind(callID.uuidText, at: 2)
            try statement.bind(caller, at: 3)
            guard try statement.step() else { return nil }
            let sender = statement.text(2)
            return EarlyCancelRecord(
                account: account,
                callID: callID,
                reason: CallEndedReason(rawValue: statement.text(0)),
                atMs: statement.int64(1),
                senderUserID: sender.isEmpty ? nil : sender
            )
        }
        try database.withStatement("DELETE FROM early_cancel WHERE account = ?1 AND call_id = ?2") {
            statement throws(FilterError) in
            try statement.bind(account, at: 1)
            try statement.bind(callID.uuidText, at: 2)
            try statement.run()
        }
        return found
    }

    /// Removes every cancel waiting for this call's invite and returns them (the invite is here: the engine
    /// decides which of them count, docs/PROTOCOL.md §15.1).
    ///
    /// - Returns: The waiting cancels, in sender order; a second call returns none.
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func consumeEarlyCancels(account: String, callID: UUID) throws(FilterError) -> [EarlyCancelRecord] {
        let found = try database.withStatement(
            "SELECT reason, at_ms, sender FROM early_cancel WHERE account = ?1 AND call_id = ?2 ORDER BY sender"
        ) { statement throws(FilterError) -> [EarlyCancelRecord] in
            try statement.bind(account, at: 1)
            try statement.bind(callID.uuidText, at: 2)
            var records: [EarlyCancelRecord] = []
            while try statement.step() {
                let sender = statement.text(2)
                records.append(
                    EarlyCancelRecord(
                        account: account,
                        callID: callID,
                        reason: CallEndedReason(rawValue: statement.text(0)),
                        atMs: statement.int64(1),
                        senderUserID: sender.isEmpty ? nil : sender
                    )
                )
            }
            return records
        }
        try database.withStatement("DELETE FROM early_cancel WHERE account = ?1 AND call_id = ?2") {
            statement throws(FilterError) in
            try statement.bind(account, at: 1)
            try statement.bind(callID.uuidText, at: 2)
            try statement.run()
        }
        return found
    }

    /// Forgets cancels that waited since before `olderThanMs` for an invite that never came.
    ///
    /// - Returns: How many cancels were forgotten.
    /// - Throws: ``FilterError`` on a SQLite failure.
    @discardableResult
    public func pruneEarlyCancels(olderThanMs: Int64) throws(FilterError) -> Int {
        try database.withStatement("DELETE FROM early_cancel WHERE at_ms < ?1") { statement throws(FilterError) in
            try statement.bind(olderThanMs, at: 1)
            try statement.run()
            return database.changes
        }
    }

    // MARK: Missed-call log

    /// Logs a missed call once; returns false if this call was already logged as missed.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    @discardableResult
    public func recordMissedCall(_ record: MissedCallRecord) throws(FilterError) -> Bool {
        try database.withStatement(
            """
            INSERT OR IGNORE INTO missed_call (account, call_id, caller_handle, display_name, at_ms, reason)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            """
        ) { statement throws(FilterError) in
            try statement.bind(record.account, at: 1)
            try statement.bind(record.callID.uuidText, at: 2)
            try statement.bind(record.callerHandle, at: 3)
            try statement.bind(record.displayName, at: 4)
            try statement.bind(record.atMs, at: 5)
            try statement.bind(record.reason.rawValue, at: 6)
            try statement.run()
            return database.changes == 1
        }
    }

    /// The missed-call log, oldest first, for one account or (nil) all of them.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func missedCalls(account: String? = nil) throws(FilterError) -> [MissedCallRecord] {
        try database.withStatement(
            """
            SELECT account, call_id, caller_handle, display_name, at_ms, reason FROM missed_call
            WHERE ?1 IS NULL OR account = ?1 ORDER BY at_ms, account, call_id
            """
        ) { statement throws(FilterError) in
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
                        reason: CallRecordReason(rawValue: statement.text(5))
                    )
                )
            }
            return records
        }
    }
}
