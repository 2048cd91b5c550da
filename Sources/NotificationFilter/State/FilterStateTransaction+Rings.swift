#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A call that is ringing: what the engine needs to end it on time and to restore it after a restart.
struct RingRecord: Sendable, Hashable {
    var account: String
    var callID: UUID
    var deadlineMs: Int64
    var callerHandle: String
    var displayName: String
    var hasVideo: Bool
}

/// Ringing calls with their deadlines, the durable outbox of call events (one row per event; a UNIQUE key makes a
/// second `ringing` for the same call impossible), callers, and declines from the caller's other devices. The
/// tables are part of the versioned schema (``FilterStateSchema/version4``, ``FilterStateSchema/version5``).
extension FilterStateTransaction {
    /// Records a ringing call, and who calls (handle, display name, video) in `call_caller`, which outlives the
    /// ring: a call that rang and ended before its events were written (a crash) is restored after a restart from
    /// this row, as it rang.
    func setRing(_ ring: RingRecord) throws(FilterError) {
        try self.database.withStatement(
            "INSERT OR REPLACE INTO call_ring VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        ) { s throws(FilterError) in
            try s.bind(ring.account, at: 1)
            try s.bind(ring.callID.uuidText, at: 2)
            try s.bind(ring.deadlineMs, at: 3)
            try s.bind(ring.callerHandle, at: 4)
            try s.bind(ring.displayName, at: 5)
            try s.bind(ring.hasVideo ? 1 : 0, at: 6)
            try s.run()
        }
        try self.database.withStatement(
            """
            INSERT OR REPLACE INTO call_caller (account, call_id, caller_handle, display_name, has_video)
            VALUES (?1, ?2, ?3, ?4, ?5)
            """
        ) { s throws(FilterError) in
            try s.bind(ring.account, at: 1)
            try s.bind(ring.callID.uuidText, at: 2)
            try s.bind(ring.callerHandle, at: 3)
            try s.bind(ring.displayName, at: 4)
            try s.bind(ring.hasVideo ? 1 : 0, at: 5)
            try s.run()
        }
    }

    /// Keeps a `remote-declined` event with the decision that makes it, until ``deleteRemoteDeclines(_:)`` after the
    /// event is in the outbox (a second decline of the same call keeps the first).
    func insertRemoteDecline(_ record: RemoteDeclineRecord) throws(FilterError) {
        try self.database.withStatement("INSERT OR IGNORE INTO remote_decline VALUES (?1, ?2, ?3, ?4, ?5)") {
            s throws(FilterError) in
            try s.bind(record.account, at: 1)
            try s.bind(record.callID.uuidText, at: 2)
            try s.bind(record.byUser, at: 3)
            try s.bind(record.byDevice, at: 4)
            try s.bind(record.atMs, at: 5)
            try s.run()
        }
    }

    /// The `remote-declined` events decided but not yet known to be in the outbox, oldest first.
    func remoteDeclines() throws(FilterError) -> [RemoteDeclineRecord] {
        try self.database.withStatement(
            "SELECT account, call_id, by_user, by_device, at_ms FROM remote_decline ORDER BY at_ms, call_id"
        ) { s throws(FilterError) in
            var out: [RemoteDeclineRecord] = []
            while try s.step() {
                guard let callID = UUID(uuidString: s.text(1)) else { continue }
                out.append(
                    RemoteDeclineRecord(
                        account: s.text(0),
                        callID: callID,
                        byUser: s.text(2),
                        byDevice: s.optionalText(3),
                        atMs: s.int64(4)
                    )
                )
            }
            return out
        }
    }

    func deleteRemoteDeclines(_ records: [RemoteDeclineRecord]) throws(FilterError) {
        for record in records {
            try self.database.withStatement("DELETE FROM remote_decline WHERE account = ?1 AND call_id = ?2") {
                s throws(FilterError) in
                try s.bind(record.account, at: 1)
                try s.bind(record.callID.uuidText, at: 2)
                try s.run()
            }
        }
    }

    /// Forgets who called in calls the state no longer knows (pruned), and missed-call records older than
    /// `olderThanMs` (the replay window: their calls are pruned too).
    @discardableResult
    func pruneCallers(missedOlderThanMs: Int64) throws(FilterError) -> Int {
        try self.database.execute(
            """
            DELETE FROM call_caller WHERE NOT EXISTS (
                SELECT 1 FROM call_state c WHERE c.account = call_caller.account AND c.call_id = call_caller.call_id)
            AND NOT EXISTS (
                SELECT 1 FROM call_ring r WHERE r.account = call_caller.account AND r.call_id = call_caller.call_id)
            """
        )
        return try self.database.withStatement(
            """
            DELETE FROM missed_call WHERE at_ms < ?1 AND NOT EXISTS (
                SELECT 1 FROM call_state c WHERE c.account = missed_call.account AND c.call_id = missed_call.call_id)
            """
        ) { s throws(FilterError) in
            try s.bind(missedOlderThanMs, at: 1)
            try s.run()
            return self.database.changes
        }
    }

    func deleteRing(account: String, callID: UUID) throws(FilterError) -> RingRecord? {
        let ring = try self.rings(where: "account = ?1 AND call_id = ?2", account, callID.uuidText).first
        try self.database.withStatement("DELETE FROM call_ring WHERE account = ?1 AND call_id = ?2") {
            s throws(FilterError) in
            try s.bind(account, at: 1)
            try s.bind(callID.uuidText, at: 2)
            try s.run()
        }
        return ring
    }

    /// The calls that are live for the call provider, as the state file holds them: every ringing call (its ring
    /// row) and every answered call still active. `run` and `once` on one state file count the same calls against
    /// the provider's maximum (docs/PROTOCOL.md §9), whichever process admitted them.
    func liveCallIDs() throws(FilterError) -> Set<UUID> {
        try self.database.withStatement(
            """
            SELECT call_id FROM call_ring
            UNION SELECT a.call_id FROM call_action a
                JOIN call_state c ON c.account = a.account AND c.call_id = a.call_id
                WHERE a.action = 'answer' AND c.state = 'active'
            """
        ) { s throws(FilterError) in
            var ids: Set<UUID> = []
            while try s.step() {
                if let id = UUID(uuidString: s.text(0)) { ids.insert(id) }
            }
            return ids
        }
    }

    /// Ringing calls whose deadline is at or before `nowMs` (all of them with `Int64.max`).
    func rings(dueBy nowMs: Int64) throws(FilterError) -> [RingRecord] {
        try self.rings(where: "deadline_ms <= ?1", String(nowMs), nil, numeric: true)
    }

    private func rings(
        where clause: String,
        _ a: String,
        _ b: String?,
        numeric: Bool = false
    ) throws(FilterError)
        -> [RingRecord]
    {
        try self.database.withStatement(
            "SELECT account, call_id, deadline_ms, caller_handle, display_name, has_video FROM call_ring WHERE \(clause) ORDER BY deadline_ms"
        ) { s throws(FilterError) in
            if numeric { try s.bind(Int64(a)!, at: 1) } else { try s.bind(a, at: 1) }
            if let b { try s.bind(b, at: 2) }
            var out: [RingRecord] = []
            while try s.step() {
                out.append(
                    RingRecord(
                        account: s.text(0),
                        callID: UUID(uuidString: s.text(1))!,
                        deadlineMs: s.int64(2),
                        callerHandle: s.text(3),
                        displayName: s.text(4),
                        hasVideo: s.int64(5) != 0
                    )
                )
            }
            return out
        }
    }

    /// Appends a call event line; false (nothing written) if the same event for the same call exists already.
    func appendEvent(event: String, account: String, callID: String, line: String) throws(FilterError) -> Bool {
        try self.database.withStatement(
            "INSERT OR IGNORE INTO event_outbox (event, account, call_id, line) VALUES (?1, ?2, ?3, ?4)"
        ) { s throws(FilterError) in
            try s.bind(event, at: 1)
            try s.bind(account, at: 2)
            try s.bind(callID, at: 3)
            try s.bind(line, at: 4)
            try s.run()
            return self.database.changes == 1
        }
    }

    /// Event lines in order, skipping the first `count` (those already written to the events file).
    func eventLines(after count: Int) throws(FilterError) -> [String] {
        try self.database.withStatement("SELECT line FROM event_outbox ORDER BY id LIMIT -1 OFFSET ?1") {
            s throws(FilterError) in
            try s.bind(Int64(count), at: 1)
            var out: [String] = []
            while try s.step() { out.append(s.text(0)) }
            return out
        }
    }

    /// Calls that rang and ended (state ended or missed), but whose end event never made it to the outbox: the
    /// process died between the decision's commit and the event's. Everything a restart needs to restore and end
    /// them comes from the state: who called and whether with video from `call_caller` (kept from the ring), else
    /// the missed-call record or the call state's caller.
    func callsEndedWithoutEndEvent() throws(FilterError) -> [EndedCallWithoutEvent] {
        // A call rang if it has a `call_caller` row (written with its ring) or an end reason of a ring (a cancel
        // reason, or `unanswered`: a call of an older state file may have no caller row). Its `ringing` event may be
        // missing too, when the invite and its end were decided in one batch and the process died before either
        // event was written: the restart rings it (once) and ends it.
        try self.database.withStatement(
            """
            SELECT c.account, c.call_id, c.end_reason, coalesce(k.caller_handle, m.caller_handle, c.caller),
                coalesce(k.display_name, m.display_name), coalesce(k.has_video, 0)
            FROM call_state c
            LEFT JOIN call_caller k ON k.account = c.account AND k.call_id = c.call_id
            LEFT JOIN missed_call m ON m.account = c.account AND m.call_id = c.call_id
            WHERE c.state IN ('ended', 'missed')
            AND NOT EXISTS (
                SELECT 1 FROM call_action a WHERE a.action = 'decline' AND a.account = c.account
                AND a.call_id = c.call_id)
            AND (k.call_id IS NOT NULL
                OR c.end_reason IN ('remoteEnded', 'answeredElsewhere', 'declinedElsewhere', 'unanswered'))
            AND NOT EXISTS (
                SELECT 1 FROM event_outbox e WHERE e.event IN ('ended', 'missed', 'declined')
                AND e.account = c.account AND e.call_id = c.call_id)
            ORDER BY c.updated_at_ms, c.call_id
            """
        ) { s throws(FilterError) in
            var out: [EndedCallWithoutEvent] = []
            while try s.step() {
                out.append(
                    EndedCallWithoutEvent(
                        account: s.text(0),
                        callID: s.text(1),
                        endReason: s.optionalText(2).map(CallRecordReason.init(rawValue:)),
                        callerHandle: s.optionalText(3),
                        displayName: s.optionalText(4),
                        hasVideo: s.int64(5) != 0
                    )
                )
            }
            return out
        }
    }

    /// Invites decided as missed because the provider refused them, whose `missed` event never made it to the
    /// outbox (the process died between the decision's commit and the event's).
    func refusedCallsWithoutEvent() throws(FilterError) -> [MissedCallRecord] {
        try self.database.withStatement(
            """
            SELECT m.account, m.call_id, m.caller_handle, m.display_name, m.at_ms, m.reason FROM missed_call m
            JOIN call_state c ON c.account = m.account AND c.call_id = m.call_id AND c.state = 'missed'
            WHERE m.reason LIKE 'call-refused-%' AND NOT EXISTS (
                SELECT 1 FROM event_outbox e WHERE e.event = 'missed' AND e.account = m.account
                AND e.call_id = m.call_id)
            ORDER BY m.at_ms, m.call_id
            """
        ) { s throws(FilterError) in
            var out: [MissedCallRecord] = []
            while try s.step() {
                guard let callID = UUID(uuidString: s.text(1)) else { continue }
                out.append(
                    MissedCallRecord(
                        account: s.text(0),
                        callID: callID,
                        callerHandle: s.optionalText(2),
                        displayName: s.optionalText(3),
                        atMs: s.int64(4),
                        reason: CallRecordReason(rawValue: s.text(5))
                    )
                )
            }
            return out
        }
    }

    /// Forgets decision lines written to the output (sequence number at or below `seq`), except those of payloads
    /// still pending (a crash while deciding them after an unlock re-decides them, deduplicated by this log).
    @discardableResult
    func pruneDecisionLog(throughSeq seq: Int64) throws(FilterError) -> Int {
        try self.database.withStatement(
            "DELETE FROM decision_log WHERE seq <= ?1 AND seq NOT IN (SELECT seq FROM pending_payload)"
        ) { s throws(FilterError) in
            try s.bind(seq, at: 1)
            try s.run()
            return self.database.changes
        }
    }

    /// Forgets outbox events of calls the state no longer knows (no call state, not ringing): pruned calls, and
    /// notices. Run after the events were written; ``prunedEventCount()`` keeps the events file reconcilable.
    @discardableResult
    func pruneEventOutbox() throws(FilterError) -> Int {
        let removed = try self.database.withStatement(
            """
            DELETE FROM event_outbox WHERE NOT EXISTS (
                SELECT 1 FROM call_state c WHERE c.account = event_outbox.account AND c.call_id = event_outbox.call_id)
            AND NOT EXISTS (
                SELECT 1 FROM call_ring r WHERE r.account = event_outbox.account AND r.call_id = event_outbox.call_id)
            """
        ) { s throws(FilterError) in
            try s.run()
            return self.database.changes
        }
        if removed > 0 {
            try self.database.withStatement(
                """
                INSERT INTO event_outbox_pruned (id, count) VALUES (1, ?1)
                ON CONFLICT (id) DO UPDATE SET count = count + ?1
                """
            ) { s throws(FilterError) in
                try s.bind(Int64(removed), at: 1)
                try s.run()
            }
        }
        return removed
    }

    /// How many outbox events were pruned in all (each was written to the events file before).
    func prunedEventCount() throws(FilterError) -> Int {
        try self.database.withStatement("SELECT count FROM event_outbox_pruned WHERE id = 1") {
            s throws(FilterError) in
            try s.step() ? Int(s.int64(0)) : 0
        }
    }

    /// Decision lines with a sequence number above `seq`, in order.
    func decisionLines(after seq: Int64) throws(FilterError) -> [String] {
        try self.database.withStatement("SELECT line FROM decision_log WHERE seq > ?1 ORDER BY seq") {
            s throws(FilterError) in
            try s.bind(seq, at: 1)
            var out: [String] = []
            while try s.step() { out.append(s.text(0)) }
            return out
        }
    }
}

/// A call whose end was decided but whose end event never reached the outbox (the process died in between).
struct EndedCallWithoutEvent {
    var account: String
    var callID: String
    var endReason: CallRecordReason?
    /// Who called, as the call rang (`call_caller`), else from the missed-call record or the call state; nil when
    /// the state does not know.
    var callerHandle: String?
    var displayName: String?
    /// Whether the call rang with video (false when the state does not know: a call ended before schema version 5).
    var hasVideo: Bool
}

/// A `remote-declined` event decided with a cancel, kept until it is in the event outbox.
struct RemoteDeclineRecord: Sendable, Hashable {
    var account: String
    var callID: UUID
    var byUser: String
    var byDevice: String?
    var atMs: Int64
}
