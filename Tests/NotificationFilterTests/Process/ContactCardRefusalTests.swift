import E2EECore
import Foundation
import TestSupport
import Testing

@testable import NotificationFilter

/// One bad card in `--contacts` is refused on its own: the other contacts keep working, and the refused card's
/// sender is an unknown sender.
@Suite("contacts: one invalid card is refused, the rest are used")
struct ContactCardRefusalTests {
    private static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test("loadContacts keeps the good card, leaves out the tampered one and logs it once without key bytes")
    func libraryRefusesOneCard() async throws {
        let fixture = try FilterFixture()
        let carol = try Identity.generate(userID: "carol", displayName: "Carol", nowMs: 1)
        let cardPath = try fixture.writeTamperedCard(of: carol, keyIDFrom: fixture.mallory)
        let records = LogCapture(label: "fp-test")
        let book = try FilterApp.loadContacts(
            folder: fixture.contactsPath,
            logger: records.logger
        )
        #expect(book.lists.keys.sorted() == ["alice"])
        let logs = records.lines
        #expect(logs.count == 1, "\(logs)")
        let log = try #require(logs.first)
        #expect(log.hasPrefix("error contact card refused"))
        #expect(log.contains(cardPath))
        #expect(log.contains("does not match its public key"))
        let carolCard = try carol.card()
        for key in [
            carolCard.devices[0].signingKey.rawRepresentation,
            carolCard.devices[0].deviceKeys[0].publicKey.rawRepresentation,
        ] {
            #expect(!log.lowercased().contains(Self.hex(Array(key))))
        }

        // Through the whole app: alice's text is decided normally, carol's is an unknown sender.
        var options = FilterAppOptions(
            accounts: [.init(identity: fixture.identityPath, contacts: fixture.contactsPath)],
            statePath: fixture.path("state.sqlite")
        )
        let now = fixture.startMs
        options.clock = .fixed(now)
        let parts = try FilterApp.build(options, logger: LogCapture(label: "fp-test").logger)
        let outcome = try await parts.engine.process(
            [
                PayloadInput(seq: 1, apnsID: nil, body: try fixture.body(FilterFixture.text("from alice"))),
                PayloadInput(
                    seq: 2,
                    apnsID: nil,
                    body: try fixture.body(FilterFixture.text("from carol"), from: carol)
                ),
            ],
            deduplicateBySeq: false
        )
        #expect(outcome.decisions.map(\.decision) == [.alert, .fallback])
        #expect(outcome.decisions.map(\.reason) == [.text, .unknownSender])
        #expect(outcome.decisions.first?.alert?.body == "from alice")
    }

    @Test("e2ee-filter once and run with a tampered card beside a good one: exit 0, alice's text is an alert")
    func processRefusesOneCard() async throws {
        let fixture = try FilterFixture()
        let carol = try Identity.generate(userID: "carol", displayName: "Carol", nowMs: 1)
        let cardPath = try fixture.writeTamperedCard(of: carol, keyIDFrom: fixture.mallory)
        let alicePayload = fixture.path("alice.json")
        try appendToFile(alicePayload, try fixture.body(FilterFixture.text("hello from alice")))

        let once = try await FilterProcess.run(
            ["once"] + fixture.accountArguments(state: fixture.path("once.sqlite")) + ["--payload", alicePayload],
            directory: fixture.directory,
            name: "once"
        )
        #expect(once.status == 0, "stderr: \(once.stderr)")
        let onceLines = JSONLines.split(once.stdout).lines
        #expect(onceLines.count == 1)
        #expect(JSONLines.object(onceLines.first ?? "")?["decision"] as? String == "alert")
        #expect(once.stderr.contains(cardPath), "stderr: \(once.stderr)")

        let input = fixture.path("input.jsonl")
        let lines = [
            try fixture.body(FilterFixture.text("first from alice")),
            try fixture.body(FilterFixture.text("from carol"), from: carol),
        ]
        try appendToFile(input, lines.flatMap { $0 + [0x0A] })
        let run = try await FilterProcess.run(
            ["run"] + fixture.accountArguments(state: fixture.path("run.sqlite")),
            stdin: input,
            directory: fixture.directory,
            name: "run"
        )
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let decisions = JSONLines.split(run.stdout).lines.compactMap(JSONLines.object)
        #expect(decisions.map { $0["decision"] as? String } == ["alert", "fallback"])
        #expect(decisions.map { $0["reason"] as? String } == ["text", "unknown-sender"])
        let refusals = run.stderr.split(separator: "\n").filter { $0.contains("contact card refused") }
        #expect(refusals.count == 1, "stderr: \(run.stderr)")
        #expect(refusals.first?.contains(cardPath) == true)
    }
}
