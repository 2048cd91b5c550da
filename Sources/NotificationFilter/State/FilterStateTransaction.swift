#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The handle through which one ``FilterStateStore/transaction(_:)`` reads and changes state.
///
/// It is non-copyable and lent to the transaction's closure, so it cannot outlive the transaction.
/// Every method throws ``FilterError``; a thrown error rolls back the whole transaction when it
/// leaves the closure.
public struct FilterStateTransaction: ~Copyable {
    let database: StateDatabase

    init(database: StateDatabase) { self.database = database }

    // MARK: Replay set

    /// Records a message id of a sender for an account; returns false if that sender's id was already recorded
    /// (a replay).
    ///
    /// Ids are remembered per sender: another sender using the same id is not a replay (a sender chooses its own
    /// ids, so it must not be able to silence someone else's message). Ids recorded by schema version 1, without
    /// a sender, count as seen for every sender until they are pruned.
    ///
    /// - Parameters:
    ///   - account: The receiving account.
    ///   - sender: The sender's user id from the signed payload (1-64 bytes).
    ///   - messageID: The 16-byte message id from the signed payload.
    ///   - sentAtMs: The send time from the signed payload, used by ``pruneReplay(olderThanMs:)``.
    /// - Returns: `true` if the id is new for this sender, `false` if it was seen before.
    /// - Throws: ``FilterError`` `.invalidArgument` unless the id is 16 bytes and the sender is not empty,
    ///   or a SQLite failure.
    public func insertMessageID(
        account: String,
        sender: String,
        messageID: [UInt8],
        sentAtMs: Int64
    ) throws(FilterError) -> Bool {
        guard messageID.count == 16 else {
            throw .invalidArgument("a message id is 16 bytes, got \(messageID.count); pass the id from the payload")
        }
        guard !sender.isEmpty else {
            throw .invalidArgument("the sender of a message id is empty; pass the sender user id from the payload")
        }
        let seenWithoutSender = try database.withStatement(
            "SELECT 1 FROM replay WHERE account = ?1 AND sender = '' AND message_id = ?2"
        ) { statement throws(FilterError) in
            try statement.bind(account, at: 1)
            try statement.bind(messageID, at: 2)
            return try statement.step()
        }
        if seenWithoutSender { return false }
        return try database.withStatement(
            "INSERT OR IGNORE INTO replay (account, sender, message_id, sent_at_ms) VALUES (?1, ?2, ?3, ?4)"
        ) { statement throws(FilterError) in
            try statement.bind(account, at: 1)
            try statement.bind(sender, at: 2)
            try statement.bind(messageID, at: 3)
            try statement.bind(sentAtMs, at: 4)
            try statement.run()
            return database.changes == 1
        }
    }

    /// Forgets message ids sent before `olderThanMs` (the replay window is enforced by send time).
    ///
    /// - Parameter olderThanMs: Ids with a send time strictly below this are removed.
    /// - Returns: How many ids were removed.
    /// - Throws: ``FilterError`` on a SQLite failure.
    @discardableResult
    public func pruneReplay(olderThanMs: Int64) throws(FilterError) -> Int {
        try database.withStatement("DELETE FROM replay WHERE sent_at_ms < ?1") { statement throws(FilterError) in
            try statement.bind(olderThanMs, at: 1)
            try statement.run()
            return database.changes
        }
    }

    // MARK: Call states

    /// The remembered state of a call, or nil if the call is unknown.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func callState(account: String, callID: UUID) throws(FilterError) -> CallStateRecord? {
        try database.withStatement(
            "SELECT state, updated_at_ms, end_reason, caller FROM call_state WHERE account = ?1 AND call_id = ?2"
        ) { statement throws(FilterError) in
            try statement.bind(account, at: 1)
            try statement.bind(callID.uuidText, at: 2)
            guard try statement.step() else { return nil }
            return CallStateRecord(
                account: account,
                callID: callID,
                state: StoredCallState(rawValue: statement.text(0)),
                updatedAtMs: statement.int64(1),
                endReason: statement.optionalText(2).map(CallRecordReason.init(rawValue:)),
                callerUserID: statement.optionalText(3)
            )
        }
    }

    /// Creates or replaces the remembered state of a call (a nil ``CallStateRecord/callerUserID`` keeps the
    /// caller already stored).
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func setCallState(_ record: CallStateRecord) throws(FilterError) {
        try database.withStatement(
            """
            INSERT INTO call_state (account, call_id, state, updated_at_ms, end_reason, caller)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            ON CONFLICT (account, call_id) DO UPDATE SET
                state = excluded.state, updated_at_ms = excluded.updated_at_ms, end_reason = excluded.end_reason,
                caller = coalesce(excluded.caller, call_state.caller)
            """
        ) { statement throws(FilterError) in
            try statement.bind(record.account, at: 1)
            try statement.bind(record.callID.uuidText, at: 2)
            try statement.bind(record.state.rawValue, at: 3)
            try statement.bind(record.updatedAtMs, at: 4)
            try statement.bind(record.endReason?.rawValue, at: 5)
            try statement.bind(record.callerUserID, at: 6)
            try statement.run()
        }
    }

    /// The calls of an account (or all accounts) in a given state, oldest update first.
    ///
    /// - Throws: ``FilterError`` on a SQLite failure.
    public func calls(in state: StoredCallState) throws(FilterError) -> [CallStateRecord] {
        try database.withStatement(
            """
            SELECT account, call_id, updated_at_ms, end_reason, caller FROM call_state WHERE state = ?1
            ORDER BY updated_at_ms, account, call_id
            """
        ) { statement throws(FilterError) in
            try statement.bind(state.rawValue, at: 1)
            var records: [CallStateRecord] = []
            while try statement.step() {
                guard let callID = UUID(uuidString: statement.text(1)) else { continue }
                records.append(
                    CallStateRecord(
                        account: statement.text(0),
                        callID: callID,
                        state: state,
                        updatedAtMs: statement.int64(2),
                        endReason: statement.optionalText(3).map(CallRecordReason.init(rawValue:)),
                        callerUserID: statement.optionalText(4)
                    )
                )
            }
            return records
        }
    }

    /// Forgets ended and missed calls last updated before `olderThanMs`; ringing and active calls stay.
    ///
    /// - Returns: How many calls were forgotten.
    /// - Throws: ``FilterError`` on a SQLite failure.
    @discardableResult
    public func pruneFinishedCalls(olderThanMs: Int64) throws(FilterError) -> Int {
        try database.withStatement(
            "DELETE FROM call_state WHERE updated_at_ms < ?1 AND state IN ('ended', 'missed')"
        ) { statement throws(FilterError) in
            try statement.bind(olderThanMs, at: 1)
            try statement.run()
            return database.changes
        }
    }
}

/// A transaction handle belongs to the thread running the transaction's closure.
@available(*, unavailable)
extension FilterStateTransaction: Sendable {}
