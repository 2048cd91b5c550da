@_spi(Vectors) import E2EECore
import Foundation
import Logging
import PushTransport
import Testing

@testable import NotificationFilter

/// A second push service, for the test only: its body is `RAW1` and the envelope's bytes. The engine must unframe
/// through the transport it is given, never through APNs by name.
enum RawTestTransport: PushTransport {
    static let name = "raw-test"
    static let maximumBodyLength = 4_096
    static let prefix = Array("RAW1".utf8)
    static var padding: PaddingTable { APNsAlertTransport.padding }

    static func body(for envelope: Envelope) -> [UInt8] { Self.prefix + envelope.serialized }

    static func envelope(fromBody body: [UInt8]) throws(E2EEError) -> Envelope {
        guard body.count <= Self.maximumBodyLength else { throw E2EEError(.tooLarge, "over 4,096 bytes") }
        guard body.starts(with: Self.prefix) else { throw E2EEError(.foreignPayload, "not a raw-test body") }
        return try Envelope(parsing: Array(body.dropFirst(Self.prefix.count)), padding: Self.padding)
    }

    static func bodyLength(forBucket bucket: Int, suite: CryptoSuite) -> Int {
        Self.prefix.count + suite.headerLength + bucket + suite.tagLength
    }
}

@Suite("The filter unframes through its push transport")
struct TransportSeamTests {
    @Test("an engine given another transport opens its bodies, and refuses an APNs body as foreign-payload")
    func otherTransport() async throws {
        let h = try EngineHarness()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let engine = try FilterEngine(
            store: h.store,
            accounts: await h.engine.accounts,
            reporter: h.reporter,
            clock: h.clock.wallClock,
            transport: RawTestTransport.self,
            logger: logger
        )
        let apnsBody = try h.body(.text(TextMessage(threadID: "t", title: "Lunch?", body: "Are we still on?")))
        let rawBody = RawTestTransport.body(for: try APNsAlertTransport.envelope(fromBody: apnsBody))
        #expect(rawBody.starts(with: RawTestTransport.prefix))

        let outcome = try await engine.process([
            PayloadInput(seq: 1, apnsID: "raw", body: rawBody),
            PayloadInput(
                seq: 2,
                apnsID: "apns",
                body: try h.body(.text(TextMessage(threadID: "", title: "", body: "x")))
            ),
        ])
        try #require(outcome.decisions.count == 2)
        #expect(outcome.decisions[0].decision == .alert)
        #expect(outcome.decisions[0].reason == .text)
        #expect(outcome.decisions[0].alert?.body == "Are we still on?")
        #expect(outcome.decisions[1].reason == .opening(.foreignPayload))

        // The APNs engine of the same harness: the other way round.
        let apns = try await h.decide(rawBody)
        #expect(apns.reason == .opening(.malformedEnvelope) || apns.reason == .opening(.foreignPayload))
    }

    @Test(
        "the daemon keeps its own device's lines by its transport's token rule: exact for raw-test, any case for APNs"
    )
    func deviceTokenByTransport() async throws {
        #expect(RawTestTransport.isSameDevice("Tok-A", "Tok-A"))
        #expect(!RawTestTransport.isSameDevice("Tok-A", "tok-a"))
        #expect(RawTestTransport.deviceTokenProblem("Tok-A") == nil)
        #expect(RawTestTransport.deviceTokenProblem("") != nil)
        let hex = String(repeating: "ab", count: 32)
        #expect(APNsAlertTransport.isSameDevice(hex, hex.uppercased()))
        #expect(APNsAlertTransport.isSameDevice("aB09", "Ab09"))
        #expect(!APNsAlertTransport.isSameDevice(hex, hex + "ab"))
        #expect(!APNsAlertTransport.isSameDevice("ab", "ac"))
        // Only ASCII folds: the Kelvin sign lower-cases to "k" in Unicode, and is still not the letter.
        #expect(!APNsAlertTransport.isSameDevice("\u{212A}", "k"))
        #expect(!APNsAlertTransport.isSameDevice("[", "{"))
        #expect(APNsAlertTransport.deviceTokenProblem("Tok-A") == DeviceToken.problem("Tok-A"))
        #expect(APNsAlertTransport.deviceTokenProblem(hex) == nil)

        let fixture = try FilterFixture()
        func line(_ seq: Int, _ token: String, _ text: String) throws -> [UInt8] {
            let envelope = try APNsAlertTransport.envelope(fromBody: try fixture.body(FilterFixture.text(text)))
            let body = Data(RawTestTransport.body(for: envelope)).base64EncodedString()
            return Array(
                #"{"apns_id":"\#(UUID().uuidString.lowercased())","body_base64":"\#(body)","device_token":"\#(token)","headers":{},"received_at_ms":1,"seq":\#(seq)}"#
                    .utf8
            ) + [0x0a]
        }
        let spool = fixture.path("raw.spool")
        try appendToFile(
            spool,
            try line(1, "Tok-A", "mine") + line(2, "tok-a", "another's") + line(3, "Tok-A", "mine too")
        )
        var options = fixture.spoolRunOptions(spool)
        options.transport = RawTestTransport.self
        options.deviceToken = "Tok-A"
        try await FilterApp.build(options, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            .daemon.run()
        let decisions = try String(contentsOfFile: fixture.path("decisions.jsonl"), encoding: .utf8)
            .split(separator: "\n")
            .map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(decisions.map { $0["seq"] as? Int } == [1, 3])
        #expect(decisions.map { $0["reason"] as? String } == ["text", "text"])
    }
}
