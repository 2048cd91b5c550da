import ArgumentParser
import CLISupport
import Foundation
import NotificationFilter
import PushTransport
import Testing

@testable import FilterCommandLine

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

    @Test("--transport names a push service of PushTransports.all: another is a usage error (64) naming the choices")
    func unknownTransport() throws {
        for command in ["run", "once", "answer"] {
            let extra = command == "answer" ? ["--call-id", UUID().uuidString] : []
            let error = try #require(throws: (any Error).self) {
                try E2EEFilter.parseAsRoot(
                    [command, "--identity", "/i", "--contacts", "/c", "--transport", "fcm"] + extra
                )
            }
            #expect(E2EEFilter.exitCode(for: error).rawValue == 64)
            #expect(
                E2EEFilter.message(for: error).contains(
                    "--transport fcm is not a push service this filter reads: give one of apns"
                ),
                "\(command): \(E2EEFilter.message(for: error))"
            )
        }
        let parsed = try E2EEFilter.parseAsRoot(["run", "--identity", "/i", "--contacts", "/c", "--transport", "apns"])
        let run = try #require(parsed as? Run)
        #expect(try run.account.options().transport == APNsAlertTransport.self)
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

    /// `once` is read without ArgumentParser on the way in (`OnceArguments`, to start faster). Whatever it reads must
    /// be what ArgumentParser parses from the same words; whatever it does not read is left to ArgumentParser.
    @Test(
        "once read directly gives ArgumentParser's values, and leaves every other spelling to it",
        arguments: [
            (["once", "--identity", "/k/bob.identity", "--contacts", "/c", "--state", "/s.sqlite", "--verbose"], true),
            (
                [
                    "once", "--config", "/a.json", "--payload", "/p.json", "--clock-skew-ms", "5",
                    "--replay-retention-hours", "0.5", "--unknown-sender", "silence",
                ], true
            ),
            (
                [
                    "once", "--identity", "/k/bob.identity", "--contacts", "/c", "--passphrase-file", "/pw",
                    "--card", "/card.json", "--device-id", "phone",
                ], true
            ),
            (["once", "--identity", "/k/bob.identity", "--contacts", "/c", "--replay-retention-hours", "0"], true),
            (["once", "--identity", "/k/bob.identity", "--contacts", "/c", "--transport", "apns"], true),
            (["once", "--identity", "/k/bob.identity", "--contacts", "/c", "--transport", "fcm"], false),
            (["once", "--identity=/k/bob.identity", "--contacts", "/c"], false),
            (["once", "--identity", "/k/bob.identity", "--contacts", "/c", "--unknown-sender", "nonsense"], false),
            (["once", "--identity", "/k/bob.identity", "--contacts", "/c", "--clock-skew-ms", "-5"], false),
            (["once", "--identity", "/k/bob.identity", "--contacts", "/c", "--clock-skew-ms", "5x"], false),
            (["once", "--identity", "/a", "--identity", "/b", "--contacts", "/c"], false),
            (["once", "--identity", "/k/bob.identity", "--bogus", "x"], false),
            (["once", "--identity"], false),
            (["once", "--contacts", "/c"], false),
            (["once", "--help"], false),
            (["once"], false),
            (["run", "--identity", "/k/bob.identity", "--contacts", "/c"], false),
        ]
    )
    func onceDirect(arguments: [String], read: Bool) throws {
        let direct = OnceArguments.parse(arguments)
        #expect((direct != nil) == read)
        guard let direct else { return }
        let parsed = try E2EEFilter.parseAsRoot(arguments)
        let once = try #require(parsed as? Once)
        #expect(OnceArguments(account: once.account.values, payload: once.payload) == direct)
    }

    @Test(
        "once read directly runs once's work: a --payload that is not there is the same unusableFile, naming the file"
    )
    func onceDirectDecides() async throws {
        let fixture = try FilterFixture()
        let missing = fixture.path("no-such-payload.json")
        let arguments =
            ["once"] + fixture.accountArguments(state: fixture.path("state.sqlite")) + ["--payload", missing]
        let work = try #require(E2EEFilter.direct(arguments))
        let error = try await #require(throws: FilterError.self) { try await work() }
        #expect(error.code == .unusableFile)
        #expect(error.message == "cannot read --payload \(missing)")
    }
}
