import E2EECore
import Foundation
import Logging
import TestSupport
import Testing

@testable import NotificationFilter

/// `once` and the accounts file live in the library (``FilterApp``): tests call them in process and give the
/// filter its clock through the builder. The executable has only the real clock (its debug-only
/// `E2EE_FILTER_NOW_MS` hook is gone).
@Suite("FilterApp: once and the accounts file, in process")
struct FilterOnceTests {
    static let logger = Logger(label: "once-test") { _ in SwiftLogNoOpLogHandler() }

    @Test("once decides by the builder's clock: a text sent long ago alerts at its own time, is stale at the real one")
    func onceTakesTheClock() async throws {
        let fixture = try FilterFixture()
        let sentAt: Int64 = 1_000_000_000_000  // 2001: stale by the real clock
        let payload = try fixture.body(FilterFixture.text("long ago"), sentAtMs: sentAt) + [0x0A, 0x0A]
        var options = FilterAppOptions(
            accounts: [.init(identity: fixture.identityPath, contacts: fixture.contactsPath)],
            statePath: fixture.path("fixed.sqlite")
        )
        options.clock = .fixed(sentAt + 1_000)
        let fixed = try await FilterApp.once(payload, options: options, logger: Self.logger)
        #expect(fixed.count == 1)
        #expect(JSONLines.object(fixed.first ?? "")?["decision"] as? String == "alert")
        #expect(JSONLines.object(fixed.first ?? "")?["reason"] as? String == "text")

        options.statePath = fixture.path("real.sqlite")
        options.clock = .system
        let real = try await FilterApp.once(payload, options: options, logger: Self.logger)
        #expect(real.count == 1)
        #expect(JSONLines.object(real.first ?? "")?["decision"] as? String == "fallback")
        #expect(JSONLines.object(real.first ?? "")?["reason"] as? String == "stale")
    }

    @Test("once hands out its line once the decision is committed, before the state file is closed")
    func lineBeforeClose() async throws {
        let fixture = try FilterFixture()
        let state = fixture.path("state.sqlite")
        let options = FilterAppOptions(
            accounts: [.init(identity: fixture.identityPath, contacts: fixture.contactsPath)],
            statePath: state
        )
        let payload = try fixture.body(FilterFixture.text("hello"), sentAtMs: WallClock.system.nowMs)
        var seen: [String] = []
        var walWhileOutput = false
        var replayRowsWhileOutput = -1
        try await FilterApp.once(payload, options: options, logger: Self.logger) { lines in
            seen = lines
            // The connection is still open: its write-ahead log is there (closing checkpoints and removes it),
            // and a second connection already reads the committed replay record.
            walWhileOutput = FileManager.default.fileExists(atPath: state + "-wal")
            replayRowsWhileOutput = (try? Self.replayRows(state)) ?? -1
        }
        #expect(seen.count == 1)
        #expect(JSONLines.object(seen.first ?? "")?["decision"] as? String == "alert")
        #expect(walWhileOutput)
        #expect(replayRowsWhileOutput == 1)
        #expect(!FileManager.default.fileExists(atPath: state + "-wal"))
    }

    /// The replay records in the state file at `path`, read through a second connection.
    static func replayRows(_ path: String) throws -> Int {
        let store = try FilterStateStore(path: path, logger: Self.logger)
        return try store.transaction { tx in
            try tx.database.withStatement("SELECT count(*) FROM replay") { s throws(FilterError) in
                _ = try s.step()
                return Int(s.int64(0))
            }
        }
    }

    @Test("e2ee-filter once ignores E2EE_FILTER_NOW_MS: the real clock, no warning")
    func noClockHook() async throws {
        let fixture = try FilterFixture()
        let sentAt: Int64 = 1_000_000_000_000
        let payload = fixture.path("payload.json")
        try appendToFile(payload, try fixture.body(FilterFixture.text("long ago"), sentAtMs: sentAt))
        let run = try await FilterProcess.run(
            ["once"] + fixture.accountArguments(state: fixture.path("state.sqlite")) + ["--payload", payload],
            directory: fixture.directory,
            name: "hook",
            environment: ["E2EE_FILTER_NOW_MS": String(sentAt + 1_000)]
        )
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let decision = JSONLines.object(JSONLines.split(run.stdout).lines.first ?? "")
        #expect(decision?["reason"] as? String == "stale")
        #expect(!run.stderr.contains("E2EE_FILTER_NOW_MS"))
    }

    @Test("the accounts file: its accounts, or an error code and a message that says what is wrong")
    func accountsFile() throws {
        let fixture = try FilterFixture()
        let good = fixture.path("accounts.json")
        try appendToFile(
            good,
            Array(
                #"{"accounts":[{"identity":"/a.identity","contacts":"/c","name":"work","passphrase_file":"/p","device_id":"phone"}]}"#
                    .utf8
            )
        )
        let accounts = try FilterAppOptions.Account.load(configFile: good)
        #expect(accounts.map(\.name) == ["work"])
        #expect(accounts.map(\.passphraseFile) == ["/p"])
        #expect(accounts.map(\.deviceID) == ["phone"])

        let missing = try #require(throws: FilterError.self) {
            try FilterAppOptions.Account.load(configFile: fixture.path("none.json"))
        }
        #expect(missing.code == .configUnreadable)
        #expect(missing.message.contains("check the path"))

        let cases: [(String, String)] = [
            (#"{"accounts":[{"contacts":"/c"}]}"#, #""identity" is missing at .accounts[0]"#),
            (#"{"accounts":[{"identity":7,"contacts":"/c"}]}"#, ".accounts[0].identity has the wrong type"),
            ("{", "it is not valid JSON"),
            ("{}", #""accounts" is missing at the top"#),
        ]
        for (index, (text, says)) in cases.enumerated() {
            let path = fixture.path("bad-\(index).json")
            try appendToFile(path, Array(text.utf8))
            let error = try #require(throws: FilterError.self) { try FilterAppOptions.Account.load(configFile: path) }
            #expect(error.code == .configInvalid, "\(text)")
            #expect(error.message.contains(says), "\(text): \(error.message)")
            #expect(!error.message.contains("DecodingError"), "\(text): \(error.message)")
        }
    }
}
