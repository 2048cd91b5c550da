import ArgumentParser
import CLISupport
import FilterCommandLine
import Foundation
import NotificationFilter
import Testing

/// `e2ee-filter`'s commands live in a library (`FilterCommandLine`): parsed and run in process, they throw the
/// libraries' errors, and only the executable turns them into exit statuses.
@Suite("FilterCommandLine: the commands, in process")
struct FilterCommandLineTests {
    @Test("a bad --device-token is a usage error (64) that names the flag, found when parsing")
    func badDeviceToken() throws {
        let error = try #require(throws: (any Error).self) {
            try E2EEFilter.parseAsRoot(["run", "--identity", "/i", "--contacts", "/c", "--device-token", "abc"])
        }
        #expect(E2EEFilter.exitCode(for: error).rawValue == 64)
        #expect(E2EEFilter.message(for: error).contains("--device-token abc is not a device token"))
    }

    @Test("once with a --payload file that is not there throws unusableFile, naming the file")
    func onceMissingPayload() async throws {
        let fixture = try FilterFixture()
        let missing = fixture.path("no-such-payload.json")
        let parsed = try E2EEFilter.parseAsRoot(
            ["once"] + fixture.accountArguments(state: fixture.path("state.sqlite")) + ["--payload", missing]
        )
        var once = try #require(parsed as? any AsyncParsableCommand)
        let error = try await #require(throws: FilterError.self) { try await once.run() }
        #expect(error.code == .unusableFile)
        #expect(error.message == "cannot read --payload \(missing)")
    }

    @Test("answer for a call that never rang throws unknownCallUUID (the executable's 65)")
    func answerUnknownCall() async throws {
        let fixture = try FilterFixture()
        let callID = "6F1D3C8E-2B7A-4E5F-9A0B-1C2D3E4F5A6B"
        let parsed = try E2EEFilter.parseAsRoot(
            ["answer"] + fixture.accountArguments(state: fixture.path("state.sqlite")) + ["--call-id", callID]
        )
        var answer = try #require(parsed as? any AsyncParsableCommand)
        let error = try await #require(throws: FilterError.self) { try await answer.run() }
        #expect(error.code == .unknownCallUUID)
    }

    /// `once` is parsed alone on the way in (``E2EEFilter/parseAsRoot(_:direct:)``), to start faster; what it parses
    /// to, and what it refuses with which message, must be what the full parse gives.
    @Test(
        "once parsed directly gives the full parse's command, errors and help",
        arguments: [
            ["once", "--identity", "/k/bob.identity", "--contacts", "/c", "--state", "/s.sqlite", "--verbose"],
            ["once", "--identity=/k/bob.identity", "--contacts", "/c", "--payload", "/p.json", "--clock-skew-ms", "5"],
            ["once", "--identity", "/k/bob.identity", "--contacts", "/c", "--unknown-sender", "silence"],
            ["once", "--identity", "/k/bob.identity", "--contacts", "/c", "--unknown-sender", "nonsense"],
            ["once", "--identity", "/k/bob.identity", "--bogus"],
            ["once", "--contacts", "/c"],
            ["once", "--help"],
            ["once", "--version"],
            ["once"],
        ]
    )
    func onceDirect(arguments: [String]) throws {
        let direct = Result { try E2EEFilter.parseAsRoot(arguments, direct: [Once.self]) }
        let full = Result { try E2EEFilter.parseAsRoot(arguments) }
        switch (direct, full) {
        case (.success(let direct), .success(let full)):
            #expect(type(of: direct) == type(of: full))
            #expect(String(describing: direct) == String(describing: full))
        case (.failure(let direct), .failure(let full)):
            #expect(E2EEFilter.exitCode(for: direct) == E2EEFilter.exitCode(for: full))
            #expect(E2EEFilter.fullMessage(for: direct) == E2EEFilter.fullMessage(for: full))
        default:
            Issue.record("direct \(direct), full \(full)")
        }
    }

    @Test("the direct parse is taken for once: a bad option given to run is refused there, not parsed as once")
    func directOnlyForNamedCommand() throws {
        let parsed = try E2EEFilter.parseAsRoot(
            ["run", "--identity", "/k/bob.identity", "--contacts", "/c"],
            direct: [Once.self]
        )
        #expect(!(parsed is Once))
        #expect(String(describing: type(of: parsed)) == "Run")
    }
}
