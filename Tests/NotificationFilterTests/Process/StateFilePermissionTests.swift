import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The state file holds call metadata: `e2ee-filter` creates it 0600 and refuses one that others may read.
@Suite("e2ee-filter: the state file is private")
struct StateFilePermissionTests {
    @Test("once creates the state file 0600; a state file made 0644 is refused with exit 70 and chmod 600")
    func stateFileMode() async throws {
        let fixture = try FilterFixture()
        let state = fixture.path("state.sqlite")
        let payload = fixture.path("payload.json")
        try appendToFile(payload, try fixture.body(FilterFixture.text("hello")))
        let arguments = ["once"] + fixture.accountArguments(state: state) + ["--payload", payload]

        let first = try await FilterProcess.run(arguments, directory: fixture.directory, name: "first")
        #expect(first.status == 0, "stderr: \(first.stderr)")
        #expect(JSONLines.object(JSONLines.split(first.stdout).lines.first ?? "")?["decision"] as? String == "alert")
        var info = stat()
        #expect(stat(state, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)

        #expect(chmod(state, 0o644) == 0)
        let refused = try await FilterProcess.run(arguments, directory: fixture.directory, name: "refused")
        #expect(refused.status == 70)
        #expect(refused.stdout.isEmpty)
        #expect(refused.stderr.contains("run chmod 600 \(state)"), "stderr: \(refused.stderr)")
    }
}
