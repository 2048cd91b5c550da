import E2EECore
import Foundation
import TestSupport
import Testing

/// The provider's maximum of live calls (two, CallKit's default) is counted from the state file, so `run` and
/// `once` on one state decide a third concurrently ringing call the same way (issue 22: `run` refused it,
/// `once` rang it, because the live-call count was kept in the process's memory).
@Suite("e2ee-filter: the live-call limit comes from the state file (run and once agree)", .serialized)
struct StoredCallLimitTests {
    /// Three invites from alice, each with its own call id, ringing for an hour.
    static func invites(_ fixture: FilterFixture) throws -> [String] {
        try (0..<3).map { _ in
            String(decoding: try fixture.body(FilterFixture.invite(UUID())), as: UTF8.self)
        }
    }

    static func decide(
        _ fixture: FilterFixture,
        _ command: String,
        _ bodies: [String],
        state: String
    ) async throws
        -> [[String: Any]]
    {
        let input = fixture.path("input-\(UUID().uuidString)")
        try (bodies.joined(separator: "\n") + "\n").write(toFile: input, atomically: true, encoding: .utf8)
        let output = try await FilterProcess.run(
            [command] + fixture.accountArguments(state: state),
            stdin: input,
            directory: fixture.directory,
            name: command
        )
        #expect(output.status == 0, "\(command): \(output.stderr)")
        return JSONLines.split(output.stdout).lines.compactMap(JSONLines.object)
    }

    static func outcome(_ decision: [String: Any]) -> String {
        "\(decision["decision"] as? String ?? "-")/\(decision["reason"] as? String ?? "-")"
    }

    @Test("two invites ring in `run`; `once` on the same state refuses the third as a missed call")
    func runThenOnce() async throws {
        let fixture = try FilterFixture()
        let invites = try Self.invites(fixture)
        let state = fixture.path("bob.sqlite")
        let first = try await Self.decide(fixture, "run", Array(invites[0..<2]), state: state)
        #expect(first.map(Self.outcome) == ["ring/fresh-invite", "ring/fresh-invite"])
        let third = try await Self.decide(fixture, "once", [invites[2]], state: state)
        #expect(third.map(Self.outcome) == ["missed-call/call-refused-maximum-calls-reached"])
    }

    @Test("two invites ring in `once`, one process each; the third is refused by `once` and by `run` alike")
    func onceThenOnceAndRun() async throws {
        let fixture = try FilterFixture()
        let invites = try Self.invites(fixture)
        let onceState = fixture.path("once.sqlite")
        for invite in invites[0..<2] {
            let decided = try await Self.decide(fixture, "once", [invite], state: onceState)
            #expect(decided.map(Self.outcome) == ["ring/fresh-invite"])
        }
        try FileManager.default.copyItem(atPath: onceState, toPath: fixture.path("run.sqlite"))
        let byOnce = try await Self.decide(fixture, "once", [invites[2]], state: onceState)
        #expect(byOnce.map(Self.outcome) == ["missed-call/call-refused-maximum-calls-reached"])
        let byRun = try await Self.decide(fixture, "run", [invites[2]], state: fixture.path("run.sqlite"))
        #expect(byRun.map(Self.outcome) == ["missed-call/call-refused-maximum-calls-reached"])
    }
}
