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

    @Test("errors about the state or the identity say what to do, with no Swift type or source line, exit 70 / 66")
    func errorsForPeople() async throws {
        let fixture = try FilterFixture()
        let payload = fixture.path("payload.json")
        try appendToFile(payload, try fixture.body(FilterFixture.text("hello")))
        // A private file that is not an SQLite database where the state file belongs.
        let garbage = fixture.path("not-sqlite.sqlite")
        try appendToFile(garbage, Array(repeating: 0x41, count: 4_096))
        let state = try await FilterProcess.run(
            ["once"] + fixture.accountArguments(state: garbage) + ["--payload", payload],
            directory: fixture.directory,
            name: "state"
        )
        #expect(state.status == 70, "\(state.stderr)")
        #expect(state.stderr.contains(garbage), "\(state.stderr)")
        // A folder there: told to name a file in it, not to chmod it.
        let folder = fixture.path("state-is-a-folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let inFolder = try await FilterProcess.run(
            ["once"] + fixture.accountArguments(state: folder) + ["--payload", payload],
            directory: fixture.directory,
            name: "folder"
        )
        #expect(inFolder.status == 70, "\(inFolder.stderr)")
        #expect(inFolder.stderr.contains("is a folder"), "\(inFolder.stderr)")
        // A public card (mode 0644) where the identity belongs: told it is a card, not to chmod 600 it.
        let card = try await FilterProcess.run(
            [
                "once", "--identity", fixture.contactsPath + "/alice.card.json", "--contacts", fixture.contactsPath,
                "--state", fixture.path("s.sqlite"), "--payload", payload,
            ],
            directory: fixture.directory,
            name: "card"
        )
        #expect(card.status == 66, "\(card.stderr)")
        #expect(card.stderr.contains("is a public card"), "\(card.stderr)")
        for output in [state, inFolder, card] {
            #expect(!output.stderr.contains("FilterError"), "\(output.stderr)")
            #expect(!output.stderr.contains(".swift:"), "\(output.stderr)")
            #expect(!output.stderr.contains("chmod"), "\(output.stderr)")
        }
    }
}
