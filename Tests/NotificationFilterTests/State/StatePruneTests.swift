@_spi(Vectors) import E2EECore
import Foundation
import Logging
import Testing

@testable import NotificationFilter

/// The daemon prunes the state on a schedule (every N payloads or T ms of its clock): old message ids, finished
/// calls, early cancels, written decision lines and outbox events of forgotten calls go; what can still change a
/// decision stays.
@Suite("Bounded state: the daemon prunes on a schedule")
struct StatePruneTests {
    static let tables = [
        "replay", "call_state", "early_cancel", "decision_log", "event_outbox", "missed_call", "call_caller",
        "remote_decline",
    ]

    func counts(_ store: FilterStateStore) throws -> [String: Int] {
        try store.transaction { tx in
            var out: [String: Int] = [:]
            for table in Self.tables {
                out[table] = try tx.database.withStatement("SELECT count(*) FROM \(table)") {
                    s throws(FilterError) in
                    _ = try s.step()
                    return Int(s.int64(0))
                }
            }
            return out
        }
    }

    /// Appends `contents`, sealed now by alice, to the spool, then runs the daemon over the spool to its end.
    func run(
        _ h: EngineHarness,
        spool: String,
        decisions: String,
        events: String,
        append lines: [String]
    ) async throws -> [String] {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let handle = try #require(FileHandle(forWritingAtPath: spool))
        handle.seekToEndOfFile()
        handle.write(Data(lines.map { $0 + "\n" }.joined().utf8))
        try handle.close()
        let outbox = try EventOutbox(store: h.store, eventsPath: events, forward: nil, logger: logger)
        let engine = try await h.engine(sink: outbox)
        var configuration = FilterDaemonConfiguration(input: .spool(path: spool), decisionsPath: decisions)
        configuration.exitAtEndOfInput = true
        configuration.pruneEveryPayloads = 4
        configuration.pruneIntervalMs = .max
        try await FilterDaemon(configuration: configuration, engine: engine, events: outbox, logger: logger).run()
        return JSONLines.read(decisions).lines.compactMap { JSONLines.object($0)?["reason"] as? String }
    }

    @Test("after the replay window the tables shrink to exact counts; a replay inside the window is still caught")
    func pruneOnSchedule() async throws {
        let h = try EngineHarness()
        let spool = h.directory + "/spool.jsonl"
        let decisions = h.directory + "/decisions.jsonl"
        let events = h.directory + "/events.jsonl"
        #expect(FileManager.default.createFile(atPath: spool, contents: nil))
        var seq: Int64 = 0
        func line(_ body: [UInt8]) -> String {
            seq += 1
            return SpoolRecord(seq: seq, body: body, receivedAtMs: h.clock.nowMs).jsonLine()
        }
        let text = { (body: String) in MessageContent.text(TextMessage(threadID: "", title: "", body: body)) }
        let ended = UUID()
        let neverInvited = UUID()
        let hungUp = UUID()
        let placed = UUID()

        // Run 1, at the start: four payloads, a prune after them (nothing is old yet; written decisions go).
        let first = try await self.run(
            h,
            spool: spool,
            decisions: decisions,
            events: events,
            append: [
                line(try h.body(text("one"))),
                line(try h.body(EngineHarness.invite(ended))),
                line(try h.body(.callCancel(CallCancel(callID: ended, reason: .answeredElsewhere)))),
                line(try h.body(.callCancel(CallCancel(callID: neverInvited, reason: .remoteEnded)))),
                line(try h.body(EngineHarness.invite(hungUp))),
                line(try h.body(.callCancel(CallCancel(callID: hungUp, reason: .remoteEnded)))),
                line(try h.body(.callCancel(CallCancel(callID: placed, reason: .declinedElsewhere)))),
            ]
        )
        #expect(
            first == [
                "text", "fresh-invite", "call-cancelled", "cancel-before-invite", "fresh-invite", "call-cancelled",
                "declined-by-callee",
            ]
        )
        // The remote-declined event is written, then pruned from the outbox (no call of this device).
        #expect(
            try self.counts(h.store)
                == [
                    "replay": 7, "call_state": 2, "early_cancel": 2, "decision_log": 0, "event_outbox": 4,
                    "missed_call": 1, "call_caller": 2, "remote_decline": 0,
                ]
        )

        // Run 2, past the replay window: the old ids, the ended call, the early cancel and its events go.
        h.clock.advance(ms: FilterPolicy().replayRetentionMs + 60_000)
        let repeated = try h.body(text("two"))
        let later = try h.body(text("three"))
        let ringing = UUID()
        let second = try await self.run(
            h,
            spool: spool,
            decisions: decisions,
            events: events,
            append: [
                line(repeated),
                line(later),
                line(try h.body(EngineHarness.invite(ringing))),
                line(repeated),
            ]
        )
        #expect(second.suffix(4) == ["text", "text", "fresh-invite", "replay"])
        // Missed calls and callers of the pruned calls go too (before: the missed-call log grew forever).
        #expect(
            try self.counts(h.store)
                == [
                    "replay": 3, "call_state": 1, "early_cancel": 0, "decision_log": 0, "event_outbox": 1,
                    "missed_call": 0, "call_caller": 1, "remote_decline": 0,
                ]
        )

        // Run 3, still inside the window: a replay of a pruned-run message is caught; no event is written twice.
        let third = try await self.run(h, spool: spool, decisions: decisions, events: events, append: [line(later)])
        #expect(third.count == 12)
        #expect(third.last == "replay")
        // ringing + ended, ringing + missed, remote-declined (run 1), ringing (run 2)
        #expect(JSONLines.read(events).lines.count == 6)
    }

    @Test("an early cancel is kept for the shorter of the longest ring and the replay window, plus twice the skew")
    func earlyCancelRetention() {
        var policy = FilterPolicy()
        #expect(policy.earlyCancelRetentionMs == 3_600_000 + 60_000)
        // A short replay window (the soak's 36 s): a late invite is `stale` after it, so its cancel need not wait.
        policy.replayRetentionMs = 36_000
        #expect(policy.earlyCancelRetentionMs == 96_000)
    }

    @Test("after a prune, an event committed but not written (a crash) is written once by the reconcile")
    func reconcileAfterPrune() async throws {
        let h = try EngineHarness()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let events = h.directory + "/events.jsonl"
        let outbox = try EventOutbox(store: h.store, eventsPath: events, forward: nil, logger: logger)
        let old = UUID().uuidString
        try outbox.record(event: "ringing", account: "bob", callID: old, line: "{\"n\":1}")
        try outbox.record(event: "ended", account: "bob", callID: old, line: "{\"n\":2}")
        // The call is forgotten (no call state): its two written events are pruned.
        let pruned = try await h.engine.prune(decisionsWrittenThrough: nil)
        #expect(pruned.events == 2)
        // A new event commits, then the process dies before writing it to the file.
        let fresh = UUID()
        try h.store.transaction { tx in
            try tx.setCallState(
                CallStateRecord(account: "bob", callID: fresh, state: .ringing, updatedAtMs: h.clock.nowMs)
            )
            _ = try tx.appendEvent(event: "ringing", account: "bob", callID: fresh.uuidString, line: "{\"n\":3}")
        }
        try EventOutbox(store: h.store, eventsPath: events, forward: nil, logger: logger).reconcile()
        try EventOutbox(store: h.store, eventsPath: events, forward: nil, logger: logger).reconcile()
        #expect(JSONLines.read(events).lines == ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}"])
    }
}
