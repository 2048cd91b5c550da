import Foundation
import Testing

/// `E2EE_FILTER_NOW_MS` is a test hook of debug builds only: used, it fixes the clock and warns on stderr.
/// (Tests run debug builds; in a release build the variable does not exist, see E2EEFilter.swift `#if DEBUG`.)
@Suite("e2ee-filter: the E2EE_FILTER_NOW_MS test hook")
struct ClockOverrideTests {
    @Test("debug build: E2EE_FILTER_NOW_MS fixes the clock and says so on stderr; without it, the real clock")
    func fixedClockWarns() async throws {
        let fixture = try FilterFixture()
        let sentAt: Int64 = 1_000_000_000_000  // 2001: stale by the real clock
        let payload = fixture.path("payload.json")
        try appendToFile(payload, try fixture.body(FilterFixture.text("long ago"), sentAtMs: sentAt))

        let fixed = try await FilterProcess.run(
            ["once"] + fixture.accountArguments(state: fixture.path("fixed.sqlite")) + ["--payload", payload],
            directory: fixture.directory,
            name: "fixed",
            environment: ["E2EE_FILTER_NOW_MS": String(sentAt + 1_000)]
        )
        #expect(fixed.status == 0, "stderr: \(fixed.stderr)")
        let fixedDecision = JSONLines.object(JSONLines.split(fixed.stdout).lines.first ?? "")
        #expect(fixedDecision?["decision"] as? String == "alert")
        #expect(fixedDecision?["reason"] as? String == "text")
        let warnings = fixed.stderr.split(separator: "\n").filter { $0.contains("E2EE_FILTER_NOW_MS") }
        #expect(
            warnings == [
                "e2ee-filter: warning: E2EE_FILTER_NOW_MS=\(sentAt + 1_000) replaces the clock (debug builds only, for tests)"
            ]
        )

        let real = try await FilterProcess.run(
            ["once"] + fixture.accountArguments(state: fixture.path("real.sqlite")) + ["--payload", payload],
            directory: fixture.directory,
            name: "real"
        )
        #expect(real.status == 0, "stderr: \(real.stderr)")
        let realDecision = JSONLines.object(JSONLines.split(real.stdout).lines.first ?? "")
        #expect(realDecision?["decision"] as? String == "fallback")
        #expect(realDecision?["reason"] as? String == "stale")
        #expect(!real.stderr.contains("E2EE_FILTER_NOW_MS"))
    }
}
