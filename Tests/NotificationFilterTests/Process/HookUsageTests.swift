import Foundation
import Testing

/// A blank `--hook` is a usage error (64, documented), not ArgumentParser's undocumented 1.
@Suite("e2ee-filter run: a blank --hook is a usage error")
struct HookUsageTests {
    @Test(
        "run --hook with a blank command exits 64 and says what is wrong, before touching the state",
        arguments: [" ", "", "\t  "]
    )
    func blankHook(hook: String) async throws {
        let fixture = try FilterFixture()
        let state = fixture.path("state.sqlite")
        let input = fixture.path("input.jsonl")
        try appendToFile(input, try fixture.body(FilterFixture.text("hello")) + [0x0A])
        let run = try await FilterProcess.run(
            ["run"] + fixture.accountArguments(state: state) + ["--hook", hook],
            stdin: input,
            directory: fixture.directory,
            name: "blank-hook"
        )
        #expect(run.status == 64, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("--hook is blank: give the shell command to run per call event"))
        #expect(run.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: state))
    }
}
