import Foundation
import Testing

/// Regression test for a bug found by this suite (fixed in the daemon/engine).
///
/// `FilterDaemon.run()` numbers the lines it reads from 1 in every run (`var lineNumber: Int64 = 0`,
/// Sources/NotificationFilter/Daemon/FilterDaemon.swift, in the `cancelWhenGracefulShutdown` loop), and a line
/// without its own `seq` (a torn or garbage spool line, an oversized line) gets that number as its seq. After a
/// restart the spool is resumed from the committed byte offset, so such a line gets a seq counted from the
/// restart: one already decided. `deduplicateBySeq` then skips it, and it never gets a decision. In one
/// uninterrupted run the same line is decided (seq = its line number), so the outcome depends on restarts.
/// A fix: for spool input, start `lineNumber` at the committed `SpoolProgress.lastSeq` (or count the lines before
/// the resume offset).
@Suite("e2ee-filter run: seq of spool lines without one, across a restart")
struct SpoolRestartSeqTests {
    @Test(
        "regression: a seq-less spool line read after a restart is decided (as seq = its line number)",
        .bug(id: "fp-1", "seq-less spool line after a restart reuses a decided seq and is dropped")
    )
    func seqlessLineAfterRestart() async throws {
        let fixture = try FilterFixture()
        let spoolPath = fixture.path("spool.jsonl")
        let output = fixture.path("decisions.jsonl")
        let arguments =
            ["run"] + fixture.accountArguments(state: fixture.path("state.sqlite"))
            + ["--spool", spoolPath, "--output", output, "--exit-at-end"]
        var lines: [String] = []
        for seq in 1...5 {
            let body = try fixture.body(FilterFixture.text("before restart \(seq)"))
            lines.append(SpoolRecord(seq: Int64(seq), body: body, receivedAtMs: fixture.startMs).jsonLine())
        }
        try appendToFile(spoolPath, Array(lines.map { $0 + "\n" }.joined().utf8))
        let first = try await FilterProcess.run(arguments, directory: fixture.directory, name: "first")
        #expect(first.status == 0, "stderr: \(first.stderr)")
        #expect(DecisionFileChecks.wholeLinesEachSeqOnce(output) == [1, 2, 3, 4, 5])

        // Line 6 is garbage (no seq); line 7 a good record.
        let seven = SpoolRecord(
            seq: 7,
            body: try fixture.body(FilterFixture.text("after restart")),
            receivedAtMs: fixture.startMs
        )
        try appendToFile(spoolPath, Array(("this line is not JSON\n" + seven.jsonLine() + "\n").utf8))
        let second = try await FilterProcess.run(arguments, directory: fixture.directory, name: "second")
        #expect(second.status == 0, "stderr: \(second.stderr)")

        // Expected: seqs 1...7, line 6 a fallback with reason malformed-envelope (not a spool record: a bare body
        // that is not JSON), what one uninterrupted run writes.
        // Actual (bug): the garbage line gets seq 1, is skipped as already decided, and line 6 has no decision.
        let seqs = DecisionFileChecks.wholeLinesEachSeqOnce(output)
        #expect(seqs == [1, 2, 3, 4, 5, 6, 7], "one decision per spool line across a restart")
        let outcomes = DecisionFileChecks.outcomes(JSONLines.read(output).lines)
        #expect(outcomes[6]?.decision == "fallback")
        #expect(outcomes[6]?.reason == "malformed-envelope")
        #expect(outcomes[7]?.reason == "text")
    }
}
