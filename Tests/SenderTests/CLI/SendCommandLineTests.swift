import ArgumentParser
import CLISupport
import E2EECore
import Foundation
import SendCommandLine
import Sender
import Testing

/// `e2ee-send`'s commands as a library (`SendCommandLine`): parsed and run in process, with the exit table the
/// caller binds, as the executable's `main` does.
@Suite("e2ee-send's commands in process")
struct SendCommandLineTests {
    /// Every Sender error is 42 here, so a status that comes out proves the bound table decided it.
    static let mapping = ExitMapping(tool: "e2ee-send") { error in
        (error as? SenderError).map { ToolExit(42, $0.message) }
    }

    static func run(_ arguments: [String]) async throws {
        let parsed = try E2EESend.parseAsRoot(arguments)
        var command = try #require(parsed as? any AsyncParsableCommand)
        try await ExitMapping.$current.withValue(Self.mapping) {
            try await command.run()
        }
    }

    @Test("keygen writes the identity (0600) and the list v1; again without --force, the bound table's status")
    func keygen() async throws {
        let dir = NSTemporaryDirectory() + "e2ee-send-in-process-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await Self.run(["keygen", "--user-id", "alice", "--device-id", "laptop", "--out-dir", dir])
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/alice.identity")[.posixPermissions]
        #expect(mode as? Int == 0o600)
        let list = try DeviceList.load(path: dir + "/alice.card.json")
        #expect(list.userID == "alice")
        #expect(list.listVersion == 1)
        #expect(list.devices.map(\.deviceID) == ["laptop"])

        let error = await #expect(throws: ExitCode.self) {
            try await Self.run(["keygen", "--user-id", "alice", "--out-dir", dir])
        }
        #expect(error?.rawValue == 42)
    }

    @Test("a bad option value is a usage error naming the option, before anything runs")
    func badOption() throws {
        let error = #expect(throws: (any Error).self) {
            try E2EESend.parseAsRoot(["keygen", "--user-id", "alice", "--out-dir", "/nonexistent", "--suite", "rsa"])
        }
        let thrown = try #require(error)
        #expect(E2EESend.exitCode(for: thrown) == .validationFailure)
        #expect(E2EESend.message(for: thrown).contains("--suite"))
    }
}
