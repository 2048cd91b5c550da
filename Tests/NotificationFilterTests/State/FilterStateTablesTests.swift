import Testing

@testable import NotificationFilter

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("FilterStateStore: each table")
struct FilterStateTablesTests {
    @Test("replay set: a message id is new once per account; other accounts are separate")
    func replaySet() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        try store.transaction { tx throws in
            #expect(
                try tx.insertMessageID(account: "alice", sender: "carol", messageID: messageID(1), sentAtMs: 100)
                    == true
            )
            #expect(
                try tx.insertMessageID(account: "alice", sender: "carol", messageID: messageID(1), sentAtMs: 999)
                    == false
            )
            #expect(
                try tx.insertMessageID(account: "bob", sender: "carol", messageID: messageID(1), sentAtMs: 100) == true
            )
            #expect(
                try tx.insertMessageID(account: "alice", sender: "carol", messageID: messageID(2), sentAtMs: 100)
                    == true
            )
        }
    }

    @Test("replay set: ids are per sender; the same id from another sender is new, from the same sender a replay")
    func replayPerSender() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        let results = try store.transaction { tx throws in
            [
                try tx.insertMessageID(account: "bob", sender: "alice", messageID: messageID(1), sentAtMs: 100),
                try tx.insertMessageID(account: "bob", sender: "carol", messageID: messageID(1), sentAtMs: 100),
                try tx.insertMessageID(account: "bob", sender: "alice", messageID: messageID(1), sentAtMs: 100),
                try tx.insertMessageID(account: "bob", sender: "carol", messageID: messageID(1), sentAtMs: 100),
            ]
        }
        #expect(results == [true, true, false, false])
        let empty = #expect(throws: FilterError.self) {
            try store.transaction { tx throws in
                try tx.insertMessageID(account: "bob", sender: "", messageID: messageID(2), sentAtMs: 1)
            }
        }
        #expect(empty?.code == .invalidArgument)
    }

    @Test("a version 1 file is migrated: its ids (no sender) stay replays for every sender; calls keep no caller")
    func replayMigrationFromVersion1() throws {
        let dir = ScratchDirectory()
        let path = dir.file("v1.sqlite")
        let legacyCall = UUID()
        let legacyCancel = UUID()
        writeScratchFile(path, [])  // 0600, as the store requires
        do {
            let v1 = try StateDatabase(path: path)
            try v1.execute(FilterStateSchema.version1)
            try v1.execute("PRAGMA application_id = \(FilterStateSchema.applicationID)")
            try v1.execute("PRAGMA user_version = 1")
            try v1.withStatement("INSERT INTO replay (account, message_id, sent_at_ms) VALUES ('bob', ?1, 100)") {
                s throws(FilterError) in
                try s.bind(messageID(7), at: 1)
                try s.run()
            }
            try v1.execute(
                """
                INSERT INTO call_state VALUES ('bob', '\(legacyCall.uuidString)', 'ringing', 100, NULL);
                INSERT INTO early_cancel VALUES ('bob', '\(legacyCancel.uuidString)', 'remoteEnded', 100);
                """
            )
        }
        let store = try openStore(path)
        let (version, legacy, fresh, pruned) = try store.transaction { tx throws in
            (
                try tx.database.withStatement("PRAGMA user_version") { s throws(FilterError) in
                    try s.step() ? s.int64(0) : -1
                },
                [
                    try tx.insertMessageID(account: "bob", sender: "alice", messageID: messageID(7), sentAtMs: 100),
                    try tx.insertMessageID(account: "bob", sender: "carol", messageID: messageID(7), sentAtMs: 100),
                ],
                [
                    try tx.insertMessageID(account: "bob", sender: "alice", messageID: messageID(8), sentAtMs: 200),
                    try tx.insertMessageID(account: "bob", sender: "carol", messageID: messageID(8), sentAtMs: 200),
                    try tx.insertMessageID(account: "bob", sender: "carol", messageID: messageID(8), sentAtMs: 200),
                ],
                try tx.pruneReplay(olderThanMs: 150)
            )
        }
        #expect(version == FilterStateSchema.currentVersion)
        // Calls and early cancels of version 1 have no caller: they match any user, as they did.
        let (call, cancel) = try store.transaction { tx throws in
            (
                try tx.callState(account: "bob", callID: legacyCall),
                try tx.consumeEarlyCancel(account: "bob", callID: legacyCancel, caller: "carol")
            )
        }
        #expect(call == CallStateRecord(account: "bob", callID: legacyCall, state: .ringing, updatedAtMs: 100))
        #expect(call?.callerUserID == nil)
        #expect(cancel == EarlyCancelRecord(account: "bob", callID: legacyCancel, reason: .remoteEnded, atMs: 100))
        #expect(legacy == [false, false])
        #expect(fresh == [true, true, false])
        #expect(pruned == 1)  // the migrated row still ages out by its send time
        let afterPrune = try store.transaction { tx throws in
            try tx.insertMessageID(account: "bob", sender: "alice", messageID: messageID(7), sentAtMs: 300)
        }
        #expect(afterPrune == true)
    }

    @Test(
        "a version 3 file is migrated: the call engine's tables are part of the schema, rows kept where they existed",
        arguments: [false, true]
    )
    func engineTablesMigrationFromVersion3(engineHadRun: Bool) throws {
        let dir = ScratchDirectory()
        let path = dir.file("v3.sqlite")
        let ringing = UUID()
        writeScratchFile(path, [])  // 0600, as the store requires
        do {
            let v3 = try StateDatabase(path: path)
            try v3.execute(FilterStateSchema.version1)
            try v3.execute(FilterStateSchema.version2)
            try v3.execute(FilterStateSchema.version3)
            try v3.execute("PRAGMA application_id = \(FilterStateSchema.applicationID)")
            try v3.execute("PRAGMA user_version = 3")
            if engineHadRun {
                // Builds of schema 3 created the engine's tables when an engine started, with version 4's DDL.
                try v3.execute(FilterStateSchema.version4)
                try v3.execute(
                    "INSERT INTO call_ring VALUES ('bob', '\(ringing.uuidString)', 5000, 'alice', 'Alice', 1)"
                )
            }
        }
        let store = try openStore(path)
        let (version, tables, rings) = try store.transaction { tx throws in
            (
                try tx.database.withStatement("PRAGMA user_version") { s throws(FilterError) in
                    try s.step() ? s.int64(0) : -1
                },
                try tx.database.withStatement("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") {
                    s throws(FilterError) in
                    var names: [String] = []
                    while try s.step() { names.append(s.text(0)) }
                    return names
                },
                try tx.rings(dueBy: Int64.max)
            )
        }
        #expect(version == FilterStateSchema.currentVersion)
        #expect(
            tables == [
                "call_action", "call_caller", "call_ring", "call_state", "decision_log", "early_cancel",
                "event_outbox", "event_outbox_pruned", "missed_call", "pending_payload", "remote_decline", "replay",
                "spool_progress", "sqlite_sequence",
            ]
        )
        #expect(
            rings
                == (engineHadRun
                    ? [
                        RingRecord(
                            account: "bob",
                            callID: ringing,
                            deadlineMs: 5000,
                            callerHandle: "alice",
                            displayName: "Alice",
                            hasVideo: true
                        )
                    ] : [])
        )
        // The engine's tables take rows without any engine having created them.
        try store.transaction { tx throws in
            try tx.insertCallAction(
                CallActionRow(
                    account: "bob",
                    callID: ringing,
                    action: "answer",
                    atMs: 10,
                    deadlineMs: 5000,
                    callerHandle: "alice",
                    displayName: "Alice",
                    hasVideo: true
                )
            )
        }
        let actions = try store.transaction { tx throws in try tx.callActions(answeredOnly: true) }
        #expect(actions.map(\.action) == ["answer"])
        #expect(actions.first?.atMs == 10)
        #expect(actions.first?.callID == ringing)
    }

    @Test(
        "a version 4 file is migrated to 5: a caller keeps whether it rang with video, taken from its ring if it rings"
    )
    func callerVideoMigrationFromVersion4() throws {
        let dir = ScratchDirectory()
        let path = dir.file("v4.sqlite")
        let ringing = UUID()
        let ended = UUID()
        writeScratchFile(path, [])  // 0600, as the store requires
        do {
            let v4 = try StateDatabase(path: path)
            try v4.execute(FilterStateSchema.version1)
            try v4.execute(FilterStateSchema.version2)
            try v4.execute(FilterStateSchema.version3)
            try v4.execute(FilterStateSchema.version4)
            try v4.execute("PRAGMA application_id = \(FilterStateSchema.applicationID)")
            try v4.execute("PRAGMA user_version = 4")
            // A video call still ringing, and a call that rang and ended (its end event lost in a crash).
            try v4.execute(
                """
                INSERT INTO call_state (account, call_id, state, updated_at_ms, end_reason, caller)
                    VALUES ('bob', '\(ringing.uuidString)', 'ringing', 10, NULL, 'alice'),
                    ('bob', '\(ended.uuidString)', 'missed', 20, 'remoteEnded', 'alice');
                INSERT INTO call_ring VALUES ('bob', '\(ringing.uuidString)', 5000, '+15550100', 'Alice', 1);
                INSERT INTO call_caller VALUES ('bob', '\(ringing.uuidString)', '+15550100', 'Alice'),
                    ('bob', '\(ended.uuidString)', '+15550101', 'Alice Two');
                """
            )
        }
        let store = try openStore(path)
        let (version, videos, unfinished) = try store.transaction { tx throws in
            (
                try tx.database.withStatement("PRAGMA user_version") { s throws(FilterError) in
                    try s.step() ? s.int64(0) : -1
                },
                try tx.database.withStatement("SELECT call_id, has_video FROM call_caller") {
                    s throws(FilterError) in
                    var out: [String: Int64?] = [:]
                    while try s.step() { out[s.text(0)] = s.isNull(1) ? .some(nil) : s.int64(1) }
                    return out
                },
                try tx.callsEndedWithoutEndEvent()
            )
        }
        #expect(version == 5)
        // From the ring while it rings; not known (NULL) for a call no longer ringing.
        let expected: [String: Int64?] = [ringing.uuidString: 1, ended.uuidString: nil]
        #expect(videos == expected)
        // The ended call is restored from its caller row, as audio (as before version 5).
        #expect(unfinished.map(\.callID) == [ended.uuidString])
        #expect(unfinished.first?.callerHandle == "+15550101")
        #expect(unfinished.first?.displayName == "Alice Two")
        #expect(unfinished.first?.hasVideo == false)
        // A ring recorded now keeps its video with the caller.
        let next = UUID()
        try store.transaction { tx throws in
            try tx.setRing(
                RingRecord(
                    account: "bob",
                    callID: next,
                    deadlineMs: 9000,
                    callerHandle: "+15550102",
                    displayName: "Alice Three",
                    hasVideo: true
                )
            )
        }
        let stored = try store.transaction { tx throws in
            try tx.database.withStatement("SELECT has_video FROM call_caller WHERE call_id = ?1") {
                s throws(FilterError) in
                try s.bind(next.uuidString, at: 1)
                return try s.step() ? s.int64(0) : -1
            }
        }
        #expect(stored == 1)
    }

    @Test("replay set: a message id of the wrong length is refused", arguments: [0, 15, 17, 32])
    func replayWrongLength(length: Int) throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        let error = #expect(throws: FilterError.self) {
            try store.transaction { tx throws in
                try tx.insertMessageID(
                    account: "a",
                    sender: "carol",
                    messageID: Array(repeating: 1, count: length),
                    sentAtMs: 1
                )
            }
        }
        #expect(error?.code == .invalidArgument)
    }

    @Test("prune removes only ids sent before the cut-off")
    func pruneReplay() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        try store.transaction { tx throws in
            for n in UInt8(0)..<10 {
                _ = try tx.insertMessageID(
                    account: "a",
                    sender: "carol",
                    messageID: messageID(n),
                    sentAtMs: Int64(n) * 1000
                )
            }
        }
        let removed = try store.transaction { tx throws in try tx.pruneReplay(olderThanMs: 5000) }
        #expect(removed == 5)
        try store.transaction { tx throws in
            // 5...9 are kept (still replays); 0...4 were forgotten (new again).
            for n in UInt8(5)..<10 {
                #expect(
                    try tx.insertMessageID(account: "a", sender: "carol", messageID: messageID(n), sentAtMs: 0) == false
                )
            }
            for n in UInt8(0)..<5 {
                #expect(
                    try tx.insertMessageID(account: "a", sender: "carol", messageID: messageID(n), sentAtMs: 0) == true
                )
            }
        }
    }

    @Test("call states: upsert, read back, list by state, prune only finished calls")
    func callStates() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        let ringing = UUID()
        let ended = UUID()
        let missed = UUID()
        try store.transaction { tx throws in
            try tx.setCallState(CallStateRecord(account: "a", callID: ringing, state: .ringing, updatedAtMs: 10))
            try tx.setCallState(CallStateRecord(account: "a", callID: ended, state: .ringing, updatedAtMs: 10))
            try tx.setCallState(
                CallStateRecord(
                    account: "a",
                    callID: ended,
                    state: .ended,
                    updatedAtMs: 20,
                    endReason: .ended(.remoteEnded)
                )
            )
            try tx.setCallState(
                CallStateRecord(
                    account: "b",
                    callID: missed,
                    state: .missed,
                    updatedAtMs: 30,
                    endReason: .ended(.unanswered)
                )
            )
        }
        try store.transaction { tx throws in
            #expect(
                try tx.callState(account: "a", callID: ended)
                    == CallStateRecord(
                        account: "a",
                        callID: ended,
                        state: .ended,
                        updatedAtMs: 20,
                        endReason: .ended(.remoteEnded)
                    )
            )
            #expect(try tx.callState(account: "b", callID: ended) == nil)
            #expect(try tx.calls(in: .ringing).map(\.callID) == [ringing])
            #expect(try tx.calls(in: .missed).map(\.account) == ["b"])
            #expect(try tx.pruneFinishedCalls(olderThanMs: 25) == 1)
            #expect(try tx.callState(account: "a", callID: ended) == nil)
            #expect(try tx.callState(account: "a", callID: ringing)?.state == .ringing)
            #expect(try tx.callState(account: "b", callID: missed)?.state == .missed)
        }
    }

    @Test("early cancels: consumed exactly once when the invite arrives; prune by age")
    func earlyCancels() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        let callID = UUID()
        let stale = UUID()
        try store.transaction { tx throws in
            try tx.recordEarlyCancel(
                EarlyCancelRecord(account: "a", callID: callID, reason: .remoteEnded, atMs: 50, senderUserID: "alice")
            )
            try tx.recordEarlyCancel(
                EarlyCancelRecord(account: "a", callID: stale, reason: .remoteEnded, atMs: 1, senderUserID: "alice")
            )
        }
        try store.transaction { tx throws in
            #expect(try tx.consumeEarlyCancel(account: "other", callID: callID, caller: "alice") == nil)
            #expect(
                try tx.consumeEarlyCancel(account: "a", callID: callID, caller: "alice")
                    == EarlyCancelRecord(
                        account: "a",
                        callID: callID,
                        reason: .remoteEnded,
                        atMs: 50,
                        senderUserID: "alice"
                    )
            )
            #expect(try tx.consumeEarlyCancel(account: "a", callID: callID, caller: "alice") == nil)
            #expect(try tx.pruneEarlyCancels(olderThanMs: 10) == 1)
            #expect(try tx.consumeEarlyCancel(account: "a", callID: stale, caller: "alice") == nil)
        }
    }

    @Test("early cancels are per sender: another user's cancel does not cancel the invite and is dropped with it")
    func earlyCancelsPerSender() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        let first = UUID()
        let second = UUID()
        try store.transaction { tx throws in
            try tx.recordEarlyCancel(
                EarlyCancelRecord(account: "a", callID: first, reason: .remoteEnded, atMs: 5, senderUserID: "carol")
            )
            try tx.recordEarlyCancel(
                EarlyCancelRecord(account: "a", callID: second, reason: .remoteEnded, atMs: 6, senderUserID: "carol")
            )
            try tx.recordEarlyCancel(
                EarlyCancelRecord(
                    account: "a",
                    callID: second,
                    reason: .answeredElsewhere,
                    atMs: 7,
                    senderUserID: "alice"
                )
            )
        }
        let (firstByAlice, firstAgain, secondByAlice, secondAgain) = try store.transaction { tx throws in
            (
                try tx.consumeEarlyCancel(account: "a", callID: first, caller: "alice"),
                try tx.consumeEarlyCancel(account: "a", callID: first, caller: "carol"),
                try tx.consumeEarlyCancel(account: "a", callID: second, caller: "alice"),
                try tx.consumeEarlyCancel(account: "a", callID: second, caller: "alice")
            )
        }
        #expect(firstByAlice == nil)  // carol's cancel does not cancel alice's invite...
        #expect(firstAgain == nil)  // ...and went away with it
        #expect(
            secondByAlice
                == EarlyCancelRecord(
                    account: "a",
                    callID: second,
                    reason: .answeredElsewhere,
                    atMs: 7,
                    senderUserID: "alice"
                )
        )
        #expect(secondAgain == nil)
    }

    @Test("call states remember the caller; a later update without one keeps it")
    func callStateCaller() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        let callID = UUID()
        let (ringing, ended) = try store.transaction { tx throws in
            try tx.setCallState(
                CallStateRecord(account: "a", callID: callID, state: .ringing, updatedAtMs: 1, callerUserID: "alice")
            )
            let ringing = try tx.callState(account: "a", callID: callID)
            try tx.setCallState(
                CallStateRecord(
                    account: "a",
                    callID: callID,
                    state: .ended,
                    updatedAtMs: 2,
                    endReason: .ended(.remoteEnded)
                )
            )
            return (ringing, try tx.callState(account: "a", callID: callID))
        }
        #expect(ringing?.callerUserID == "alice")
        #expect(ended?.state == .ended)
        #expect(ended?.callerUserID == "alice")
    }

    @Test("missed-call log: one entry per call, oldest first, filtered by account")
    func missedCalls() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        let first = MissedCallRecord(
            account: "a",
            callID: UUID(),
            callerHandle: "+15551234",
            displayName: "Ann",
            atMs: 10,
            reason: .ended(.unanswered)
        )
        let second = MissedCallRecord(
            account: "b",
            callID: UUID(),
            callerHandle: nil,
            displayName: nil,
            atMs: 20,
            reason: .ended(.remoteEnded)
        )
        try store.transaction { tx throws in
            #expect(try tx.recordMissedCall(second))
            #expect(try tx.recordMissedCall(first))
            #expect(try tx.recordMissedCall(first) == false)
        }
        try store.transaction { tx throws in
            #expect(try tx.missedCalls() == [first, second])
            #expect(try tx.missedCalls(account: "b") == [second])
            #expect(try tx.missedCalls(account: "nobody").isEmpty)
        }
    }

    @Test("decision log: one line per seq, the first one wins, last decided seq")
    func decisionLog() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        try store.transaction { tx throws in
            #expect(try tx.lastDecidedSeq() == nil)
            #expect(try tx.recordDecision(seq: 2, line: "{\"seq\":2}"))
            #expect(try tx.recordDecision(seq: 1, line: "{\"seq\":1}"))
            #expect(try tx.recordDecision(seq: 2, line: "{\"seq\":2,\"again\":true}") == false)
        }
        try store.transaction { tx throws in
            #expect(try tx.decision(forSeq: 2) == "{\"seq\":2}")
            #expect(try tx.decision(forSeq: 3) == nil)
            #expect(try tx.lastDecidedSeq() == 2)
        }
    }

    @Test("spool progress: per path, overwritten, negative offsets refused")
    func spoolProgress() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        try store.transaction { tx throws in
            try tx.setSpoolProgress(path: "/a", SpoolProgress(byteOffset: 10, lastSeq: 1))
            try tx.setSpoolProgress(path: "/a", SpoolProgress(byteOffset: 20, lastSeq: 2))
            try tx.setSpoolProgress(path: "/b", SpoolProgress(byteOffset: 5, lastSeq: 9))
        }
        try store.transaction { tx throws in
            #expect(try tx.spoolProgress(path: "/a") == SpoolProgress(byteOffset: 20, lastSeq: 2))
            #expect(try tx.spoolProgress(path: "/b") == SpoolProgress(byteOffset: 5, lastSeq: 9))
            #expect(try tx.spoolProgress(path: "/c") == nil)
        }
        let error = #expect(throws: FilterError.self) {
            try store.transaction { tx throws in
                try tx.setSpoolProgress(path: "/a", SpoolProgress(byteOffset: -1, lastSeq: 3))
            }
        }
        #expect(error?.code == .invalidArgument)
    }

    @Test("pending payloads: enqueue once, drain in seq order in batches, delete")
    func pendingPayloads() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        try store.transaction { tx throws in
            for seq: Int64 in [5, 3, 9, 1] {
                #expect(try tx.enqueuePending(seq: seq, payload: "p\(seq)", atMs: seq * 10))
            }
            #expect(try tx.enqueuePending(seq: 3, payload: "other", atMs: 0) == false)
        }
        var drained: [String] = []
        while true {
            let batch = try store.transaction { tx throws in
                let batch = try tx.pendingPayloads(limit: 3)
                for item in batch { #expect(try tx.deletePending(seq: item.seq)) }
                return batch
            }
            if batch.isEmpty { break }
            drained += batch.map(\.payload)
        }
        #expect(drained == ["p1", "p3", "p5", "p9"])
        try store.transaction { tx throws in
            #expect(try tx.pendingCount() == 0)
            #expect(try tx.deletePending(seq: 1) == false)
        }
    }
}
