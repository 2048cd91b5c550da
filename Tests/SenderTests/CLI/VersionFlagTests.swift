import CLISupport
import TestSupport
import Testing

/// `--version` on each of the four executables prints the one release number and exits 0, as operators expect of
/// every service and tool they run.
@Suite("--version on every executable")
struct VersionFlagTests {
    @Test(
        "prints ToolVersion.current and exits 0",
        arguments: ["e2ee-send", "e2ee-filter", "e2ee-gateway", "e2ee-relay"]
    )
    func version(executable: String) async throws {
        let output = try await ChildProcess.run(executable, ["--version"])
        #expect(output.status == 0)
        #expect(output.stdoutText == ToolVersion.current + "\n")
        #expect(output.stderr.isEmpty)
    }
}
