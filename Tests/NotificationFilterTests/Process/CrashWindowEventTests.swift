import E2EECore
import Foundation
import Logging
import Testing

@testable import NotificationFilter

/// Regression test for a bug found by this suite (fixed in the daemon/engine).
///
/// `FilterEngine.process` commits a cancel's decision (call state `ended`/`missed`, ring row deleted) in the batch
/// transaction and only AFTER the commit tells the reporter (`perform(actions)` → `endCall` → provider →
/// `EventOutbox.record`, a second transaction). A process killed between the two commits leaves a call whose
/// `ringing` event was written but whose end never will be: `recoverAfterRestart()` only looks at `call_ring`
/// (already deleted) and `EventOutbox.reconcile()` only writes rows that were committed. The events file (and the
/// hook) then shows the call ringing forever although the caller hung up or it was answered elsewhere
/// (docs/FAILURE-MODES.md item 5), contradicting EventOutbox's "no event is lost". The same window exists in `expireRinging()`.
/// Files: Sources/NotificationFilter/Engine/FilterEngine.swift (`process`, `expireRinging`, `perform`), and
/// Sources/NotificationFilter/Engine/CallKitReporter.swift. A fix: commit the end intent with the decision (an
/// outbox row, or a `call_end_pending` row replayed by `recoverAfterRestart`).
///
/// The kill is simulated exactly: a reporter that drops `endCall` leaves the same files a SIGKILL in that window
/// leaves (decision committed, no end event), then a real restart runs over them.
@Suite("Crash between a cancel's commit and its call event")
struct CrashWindowEventTests {
    /// Forwards to a real reporter, except `endCall`: the process "dies" before the end reaches the outbox.
    struct DiesBeforeEnd: CallReporting {
        let inner: CallKitReporter
        func handOff(_ handoff: FilterDecision.Handoff) async { await self.inner.handOff(handoff) }
        func endCall(account: String, callID: UUID, cause: CallEndCause, atMs: Int64) async {}
        func restoreRinging(_ handoff: FilterDecision.Handoff) async { await self.inner.restoreRinging(handoff) }
        func admission() async -> CallAdmission { await self.inner.admission() }
        func reportRefused(_ handoff: FilterDecision.Handoff, refusal: FilterError.Code, atMs: Int64) async {
            await self.inner.reportRefused(handoff, refusal: refusal, atMs: atMs)
        }
        func apply(_ action: CallUserAction, _ handoff: FilterDecision.Handoff) async {
            await self.inner.apply(action, handoff)
        }
        func reportRemoteDeclined(account: String, callID: UUID, byUser: String, byDevice: String?, atMs: Int64) async {
            await self.inner.reportRemoteDeclined(
                account: account,
                callID: callID,
                byUser: byUser,
                byDevice: byDevice,
                atMs: atMs
            )
        }
    }

    @Test(
        "regression: a call cancelled just before a kill still gets its end event after the restart",
        .bug(id: "fp-2", "end event lost when killed between the cancel's commit and the outbox commit")
    )
    func endEventSurvivesKill() async throws {
        let fixture = try FilterFixture()
        let logger = Logger(label: "fp", factory: { _ in SwiftLogNoOpLogHandler() })
        let spoolPath = fixture.path("spool.jsonl")
        let statePath = fixture.path("state.sqlite")
        let eventsPath = fixture.path("events.jsonl")
        let callID = UUID()
        let records = [
            SpoolRecord(seq: 1, body: try fixture.body(FilterFixture.invite(callID)), receivedAtMs: fixture.startMs),
            SpoolRecord(
                seq: 2,
                body: try fixture.body(FilterFixture.cancel(callID, .answeredElsewhere)),
                receivedAtMs: fixture.startMs
            ),
        ]
        let bytes = records.map { Array(($0.jsonLine() + "\n").utf8) }
        try appendToFile(spoolPath, bytes[0] + bytes[1])

        // Before the kill: the invite rings (its `ringing` event is written), the cancel commits, then death.
        do {
            let store = try FilterStateStore(path: statePath, logger: logger)
            let outbox = try EventOutbox(store: store, eventsPath: eventsPath, forward: nil, logger: logger)
            let reporter = CallKitReporter(configuration: .init(), sink: outbox, clock: .system, logger: logger)
            let engine = try FilterEngine(
                store: store,
                accounts: [FilterAccount(identity: fixture.bob, contacts: ContactBook([try fixture.alice.card()]))],
                reporter: DiesBeforeEnd(inner: reporter),
                clock: .system,
                logger: logger
            )
            let invite = PayloadInput.parse(line: Array(records[0].jsonLine().utf8), defaultSeq: 1)
            let cancel = PayloadInput.parse(line: Array(records[1].jsonLine().utf8), defaultSeq: 2)
            let first = try await engine.process([invite], spool: (spoolPath, Int64(bytes[0].count)))
            #expect(first.decisions.map(\.reason) == [.freshInvite])
            let second = try await engine.process([cancel], spool: (spoolPath, Int64(bytes[0].count + bytes[1].count)))
            #expect(second.decisions.map(\.reason) == [.callCancelled])
        }
        #expect(self.events(eventsPath, callID) == ["ringing"], "the state a kill in that window leaves")

        // The restart, as `e2ee-filter run --spool … --exit-at-end` does it.
        var options = fixture.spoolRunOptions(spoolPath, state: statePath)
        options.eventsPath = eventsPath
        try await FilterApp.build(options, logger: logger).daemon.run()

        // Expected: the call's ringing is ended (`ended`, reason answeredElsewhere). Actual: only `ringing`.
        let kinds = self.events(eventsPath, callID)
        #expect(kinds.first == "ringing")
        #expect(kinds.count == 2 && ["ended", "missed"].contains(kinds.last ?? ""), "events for the call: \(kinds)")
    }

    /// Drops every call event: the process "dies" right after the batch's commit, before any handoff or end.
    struct DiesAfterCommit: CallReporting {
        let inner: CallKitReporter
        func handOff(_ handoff: FilterDecision.Handoff) async {}
        func endCall(account: String, callID: UUID, cause: CallEndCause, atMs: Int64) async {}
        func restoreRinging(_ handoff: FilterDecision.Handoff) async { await self.inner.restoreRinging(handoff) }
        func admission() async -> CallAdmission { await self.inner.admission() }
        func reportRefused(_ handoff: FilterDecision.Handoff, refusal: FilterError.Code, atMs: Int64) async {}
        func apply(_ action: CallUserAction, _ handoff: FilterDecision.Handoff) async {
            await self.inner.apply(action, handoff)
        }
        func reportRemoteDeclined(account: String, callID: UUID, byUser: String, byDevice: String?, atMs: Int64) async {
            await self.inner.reportRemoteDeclined(
                account: account,
                callID: callID,
                byUser: byUser,
                byDevice: byDevice,
                atMs: atMs
            )
        }
    }

    @Test(
        "regression: an invite and its cancel decided in one batch, killed before either event: both after restart",
        .bug(id: "fp-4", "ringing and missed events lost when a call rang and ended in the batch a kill interrupted")
    )
    func ringAndEndInOneBatchSurviveKill() async throws {
        let fixture = try FilterFixture()
        let logger = Logger(label: "fp", factory: { _ in SwiftLogNoOpLogHandler() })
        let spoolPath = fixture.path("spool.jsonl")
        let statePath = fixture.path("state.sqlite")
        let eventsPath = fixture.path("events.jsonl")
        let hungUp = UUID()
        let answered = UUID()
        let records = [
            SpoolRecord(seq: 1, body: try fixture.body(FilterFixture.invite(hungUp)), receivedAtMs: fixture.startMs),
            SpoolRecord(
                seq: 2,
                body: try fixture.body(FilterFixture.cancel(hungUp, .remoteEnded)),
                receivedAtMs: fixture.startMs
            ),
            SpoolRecord(seq: 3, body: try fixture.body(FilterFixture.invite(answered)), receivedAtMs: fixture.startMs),
            SpoolRecord(
                seq: 4,
                body: try fixture.body(FilterFixture.cancel(answered, .answeredElsewhere)),
                receivedAtMs: fixture.startMs
            ),
        ]
        let bytes = records.flatMap { Array(($0.jsonLine() + "\n").utf8) }
        try appendToFile(spoolPath, bytes)

        // Before the kill: one batch decides all four, commits, and the process dies before any call event.
        do {
            let store = try FilterStateStore(path: statePath, logger: logger)
            let outbox = try EventOutbox(store: store, eventsPath: eventsPath, forward: nil, logger: logger)
            let reporter = CallKitReporter(configuration: .init(), sink: outbox, clock: .system, logger: logger)
            let engine = try FilterEngine(
                store: store,
                accounts: [FilterAccount(identity: fixture.bob, contacts: ContactBook([try fixture.alice.card()]))],
                reporter: DiesAfterCommit(inner: reporter),
                clock: .system,
                logger: logger
            )
            let inputs = records.enumerated().map { index, record in
                PayloadInput.parse(line: Array(record.jsonLine().utf8), defaultSeq: Int64(index + 1))
            }
            let batch = try await engine.process(inputs, spool: (spoolPath, Int64(bytes.count)))
            #expect(
                batch.decisions.map(\.reason) == [.freshInvite, .callCancelled, .freshInvite, .callCancelled]
            )
        }
        #expect(self.events(eventsPath, hungUp).isEmpty, "the state a kill in that window leaves")

        var options = fixture.spoolRunOptions(spoolPath, state: statePath)
        options.eventsPath = eventsPath
        try await FilterApp.build(options, logger: logger).daemon.run()

        // As an uninterrupted run: each call rang once, then ended (hung up: missed; answered elsewhere: ended).
        #expect(self.events(eventsPath, hungUp) == ["ringing", "missed"])
        #expect(self.events(eventsPath, answered) == ["ringing", "ended"])
    }

    private func events(_ path: String, _ callID: UUID) -> [String] {
        JSONLines.read(path).lines.compactMap { line in
            guard let object = JSONLines.object(line), object["call_id"] as? String == callID.uuidString else {
                return nil
            }
            return object["event"] as? String
        }
    }
}
