#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One answer or decline of the user, as `call_action` stores it: what the call provider needs to show the call.
struct CallActionRow: Sendable, Hashable {
    /// Insertion order (0 before the row is stored).
    var id: Int64 = 0
    var account: String
    var callID: UUID
    /// `answer` or `decline` (the engine's `CallUserAction` raw values).
    var action: String
    var atMs: Int64
    var deadlineMs: Int64
    var callerHandle: String
    var displayName: String
    var hasVideo: Bool
    /// Whether the provider has been given it.
    var applied = false
    /// The call's state when read (joined from `call_state`).
    var callState: StoredCallState? = nil
}

extension FilterStateTransaction {
    /// Records an action once per (account, call, action); a second one is ignored.
    func insertCallAction(_ row: CallActionRow) throws(FilterError) {
        try self.database.withStatement(
            """
            INSERT OR IGNORE INTO call_action
            (account, call_id, action, at_ms, deadline_ms, caller_handle, display_name, has_video)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
            """
        ) { s throws(FilterError) in
            try s.bind(row.account, at: 1)
            try s.bind(row.callID.uuidText, at: 2)
            try s.bind(row.action, at: 3)
            try s.bind(row.atMs, at: 4)
            try s.bind(row.deadlineMs, at: 5)
            try s.bind(row.callerHandle, at: 6)
            try s.bind(row.displayName, at: 7)
            try s.bind(row.hasVideo ? 1 : 0, at: 8)
            try s.run()
        }
    }

    /// Recorded actions in order: those not yet applied (`pendingOnly`), or the answers (`answeredOnly`).
    func callActions(answeredOnly: Bool, pendingOnly: Bool = false) throws(FilterError) -> [CallActionRow] {
        try self.database.withStatement(
            """
            SELECT a.id, a.account, a.call_id, a.action, a.deadline_ms, a.caller_handle, a.display_name, a.has_video,
                a.applied, c.state, a.at_ms
            FROM call_action a LEFT JOIN call_state c ON c.account = a.account AND c.call_id = a.call_id
            WHERE (?1 = 0 OR a.action = 'answer') AND (?2 = 0 OR a.applied = 0)
            ORDER BY a.id
            """
        ) { s throws(FilterError) in
            try s.bind(answeredOnly ? 1 : 0, at: 1)
            try s.bind(pendingOnly ? 1 : 0, at: 2)
            var out: [CallActionRow] = []
            while try s.step() {
                guard let callID = UUID(uuidString: s.text(2)) else { continue }
                out.append(
                    CallActionRow(
                        id: s.int64(0),
                        account: s.text(1),
                        callID: callID,
                        action: s.text(3),
                        atMs: s.int64(10),
                        deadlineMs: s.int64(4),
                        callerHandle: s.text(5),
                        displayName: s.text(6),
                        hasVideo: s.int64(7) != 0,
                        applied: s.int64(8) != 0,
                        callState: s.optionalText(9).map(StoredCallState.init(rawValue:))
                    )
                )
            }
            return out
        }
    }

    func markCallActionsApplied(_ ids: [Int64]) throws(FilterError) {
        for id in ids {
            try self.database.withStatement("UPDATE call_action SET applied = 1 WHERE id = ?1") {
                s throws(FilterError) in
                try s.bind(id, at: 1)
                try s.run()
            }
        }
    }

    /// Forgets applied actions of calls the state no longer knows (pruned with their calls).
    func pruneCallActions() throws(FilterError) {
        try self.database.execute(
            """
            DELETE FROM call_action WHERE applied = 1 AND NOT EXISTS (
                SELECT 1 FROM call_state c WHERE c.account = call_action.account AND c.call_id = call_action.call_id)
            """
        )
    }
}
