import E2EECore
import Foundation
import Logging
import Testing

@testable import NotificationFilter

/// Call events after a kill between a batch's commit and its events (found by scripts/pipeline-crash.py comparing
/// call events with an uninterrupted run): the restart must write exactly the events an uninterrupted run writes.
///
/// The kill is simulated exactly, as in ``CrashWindowEventTests``: a reporter that drops every post-commit report
/// leaves the files a SIGKILL in that window leaves; then a real restart (`FilterApp`, spool, `--exit-at-end`) runs.
@Suite("Crash between a batch's commit and its call events: same events as an uninterrupted run")
struct CrashWindowRecoveryTests {
    /// The process "dies" right after the batch's commit: no handoff, end, refusal or remote-declined is reported.
    /// A `remote-declined` report never returns (the engine settles it only after the outbox has it): the test
    /// abandons the engine there, as a kill would.
    struct DiesAfterCommit: CallReporting {
        let inner: CallKitReporter
        func handOff(_ handoff: FilterDecision.Handoff) async {}
        func endCall(account: String, callID: UUID, cause: CallEndCause, atMs: Int64) async {}
        func restoreRinging(_ handoff: FilterDecision.Handoff) async { await self.inner.restoreRinging(handoff) }
        func admission() async -> CallAdmission { await self.inner.admission() }
        func reportRefused(_ handoff: FilterDecision.Handoff, refusal: FilterError.Code, atMs: Int64) async {}
        func apply(_ action: CallUserAction, _ handoff: FilterDecision.Handoff) async {}
        func reportRemoteDeclined(account: String, callID: UUID, byUser: String, byDevice: String?, atMs: Int64) async {
            try? await Task.sleep(for: .seconds(3_600))
        }
    }

    let logger = Logger(label: "fp", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Writes `contents` as spool records, decides them all in one batch with a reporter that "dies" after the
    /// commit (`killed`: true) or a real one, then restarts as `e2ee-filter run --spool … --exit-at-end` twice.
    /// Returns the events file's lines.
    private func run(
        _ fixture: FilterFixture,
        _ contents: [MessageContent],
        tag: String,
        killed: Bool
    ) async throws -> [String] {
        let spoolPath = fixture.path("\(tag).spool.jsonl")
        let statePath = fixture.path("\(tag).sqlite")
        let eventsPath = fixture.path("\(tag).events.jsonl")
        var records: [SpoolRecord] = []
        for (index, content) in contents.enumerated() {
            records.append(
                SpoolRecord(seq: Int64(index + 1), body: try fixture.body(content), receivedAtMs: fixture.startMs)
            )
        }
        let bytes = records.flatMap { Array(($0.jsonLine() + "\n").utf8) }
        try appendToFile(spoolPath, bytes)
        // The "killed" engine's batch stays stuck until the restarts are done (a dead process settles nothing).
        var abandoned: Task<FilterEngine.Outcome, any Error>?
        defer { abandoned?.cancel() }
        do {
            let store = try FilterStateStore(path: statePath, logger: self.logger)
            let outbox = try EventOutbox(store: store, eventsPath: eventsPath, forward: nil, logger: self.logger)
            let real = CallKitReporter(configuration: .init(), sink: outbox, clock: .system, logger: self.logger)
            let engine = try FilterEngine(
                store: store,
                accounts: [FilterAccount(identity: fixture.bob, contacts: ContactBook([try fixture.alice.card()]))],
                reporter: killed ? DiesAfterCommit(inner: real) : real,
                clock: .system,
                logger: self.logger
            )
            let inputs = records.enumerated().map { index, record in
                PayloadInput.parse(line: Array(record.jsonLine().utf8), defaultSeq: Int64(index + 1))
            }
            let batch = Task { try await engine.process(inputs, spool: (spoolPath, Int64(bytes.count))) }
            abandoned = batch
            if killed {
                // "Killed" once the batch is committed (the engine may be stuck in a report that never returns).
                var committed = false
                for _ in 0..<500 where !committed {
                    committed = try store.transaction { tx in try tx.decision(forSeq: Int64(records.count)) != nil }
                    if !committed { try await Task.sleep(for: .milliseconds(10)) }
                }
                try #require(committed, "the batch was never committed")
            } else {
                _ = try await batch.value
            }
        }
        for _ in 0..<2 {
            var options = fixture.spoolRunOptions(
                spoolPath,
                state: statePath,
                decisions: fixture.path("\(tag).decisions.jsonl")
            )
            options.eventsPath = eventsPath
            try await FilterApp.build(options, logger: self.logger).daemon.run()
        }
        return JSONLines.read(eventsPath).lines
    }

    /// Each event line without its time (which differs between runs), keys sorted.
    private func timeless(_ lines: [String]) -> [String] {
        lines.map { line in
            var object = JSONLines.object(line) ?? [:]
            object["at_ms"] = nil
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
    }

    @Test(
        "regression: a remote-declined event decided just before a kill is written after the restart, once",
        .bug(id: "fp-8a", "remote-declined lost when killed between the decision's commit and the outbox")
    )
    func remoteDeclinedSurvivesKill() async throws {
        let fixture = try FilterFixture()
        let placed = UUID()
        let contents = [FilterFixture.cancel(placed, .declinedElsewhere)]
        let killed = try await self.run(fixture, contents, tag: "killed", killed: true)
        let reference = try await self.run(fixture, contents, tag: "reference", killed: false)

        // Before the fix: no event at all after the restart (the decision said declined-by-callee).
        #expect(killed.count == 1, "events: \(killed)")
        let event = try #require(killed.first.flatMap(JSONLines.object))
        #expect(event["event"] as? String == "remote-declined")
        #expect(event["call_id"] as? String == placed.uuidString)
        #expect(event["by_user"] as? String == "alice")
        #expect(self.timeless(killed) == self.timeless(reference))
        // Settled: nothing is kept to report again.
        let store = try FilterStateStore(path: fixture.path("killed.sqlite"), logger: self.logger)
        #expect(try store.transaction { tx in try tx.remoteDeclines() }.isEmpty)
    }

    @Test(
        "regression: calls rung and ended in the batch a kill interrupted are restored with their caller's name",
        .bug(id: "fp-8b", "restored ringing/ended events lost the display name (and handle) the call rang with")
    )
    func restoredEventsKeepTheCaller() async throws {
        let fixture = try FilterFixture()
        let hungUp = UUID()
        let answered = UUID()
        let declined = UUID()
        let contents = [
            FilterFixture.invite(hungUp, name: "Alice Example", handle: "+15550100"),
            FilterFixture.cancel(hungUp, .remoteEnded),
            FilterFixture.invite(answered, name: "Alice Example", handle: "+15550100"),
            FilterFixture.cancel(answered, .answeredElsewhere),
            FilterFixture.invite(declined, name: "Alice Example", handle: "+15550100"),
            FilterFixture.cancel(declined, .declinedElsewhere),
        ]
        let killed = try await self.run(fixture, contents, tag: "killed", killed: true)
        let reference = try await self.run(fixture, contents, tag: "reference", killed: false)

        #expect(reference.count == 6, "uninterrupted: \(reference)")
        // Before the fix the restored events named the caller by user id ("alice") without a display name.
        #expect(self.timeless(killed).sorted() == self.timeless(reference).sorted())
        let names = killed.compactMap { JSONLines.object($0)?["display_name"] as? String }
        #expect(names == Array(repeating: "Alice Example", count: 6))
    }
}
