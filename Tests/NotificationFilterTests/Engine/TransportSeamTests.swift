@_spi(Vectors) import E2EECore
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
}
