import E2EECore
import Foundation
import Testing

@testable import Sender

/// The send-time override for tests and demos: `sent_at_ms` in batch lines, `sentAtMs:` on `PushBuilder.build`.
@Suite("Send-time override")
struct SentAtOverrideTests {
    static let token = String(repeating: "ab", count: 32)
    static let clockMs: UInt64 = 1_800_000_000_000

    /// Alice sends to Bob with a builder whose clock reads `clockMs`.
    static func parties() throws -> (alice: Identity, bob: Identity, card: DeviceList, builder: PushBuilder) {
        let alice = try Identity.generate(userID: "alice", displayName: "Alice", nowMs: 1)
        let bob = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1)
        let card = try bob.card(push: PushAddress(APNsAddress(topic: "com.example.e2ee", deviceToken: Self.token)))
        let builder = PushBuilder(identity: alice, topic: "com.example.e2ee", clock: .fixed(Int64(Self.clockMs)))
        return (alice, bob, card, builder)
    }

    /// Opens a request's body as Bob's device does and returns the signed send time.
    static func signedSendTime(_ request: APNsRequest, bob: Identity, alice: Identity) throws -> UInt64 {
        let contacts = ContactBook([try alice.card()])
        let opened = try PushPayload.open(
            body: request.bodyBytes,
            deviceKey: { bob.deviceKey(for: $0, nowMs: 2) },
            signingKey: { contacts.signingKey(userID: $0, keyID: $1) }
        )
        return opened.message.sentAtMs
    }

    @Test("build(sentAtMs:) signs the given time, not the builder's clock")
    func buildSignsOverride() throws {
        let (alice, bob, card, builder) = try Self.parties()
        let twoMinutesAgo = Self.clockMs - 120_000
        let built = try builder.build(
            .text(TextMessage(threadID: "", title: "", body: "hi")),
            to: card,
            sentAtMs: twoMinutesAgo
        )
        #expect(try Self.signedSendTime(built.request, bob: bob, alice: alice) == twoMinutesAgo)
    }

    @Test("without sentAtMs the builder's clock is signed")
    func buildSignsClockByDefault() throws {
        let (alice, bob, card, builder) = try Self.parties()
        let built = try builder.build(.text(TextMessage(threadID: "", title: "", body: "hi")), to: card)
        #expect(try Self.signedSendTime(built.request, bob: bob, alice: alice) == Self.clockMs)
    }

    @Test("the override changes neither headers nor body length")
    func overrideKeepsUniformity() throws {
        let (_, _, card, builder) = try Self.parties()
        let content = MessageContent.callInvite(
            CallInvite(
                callID: UUID(),
                callerHandle: "alice",
                displayName: "Alice",
                hasVideo: false,
                ringTimeoutSeconds: 30,
                groupParticipants: [],
                customHeaders: [:]
            )
        )
        let now = try builder.build(content, to: card).request
        let late = try builder.build(content, to: card, sentAtMs: 1).request
        #expect(now.headers.filter { $0.key != "apns-id" } == late.headers.filter { $0.key != "apns-id" })
        #expect(now.bodyBytes.count == late.bodyBytes.count)
        #expect(now.bodyBytes.count == 2233)
    }

    @Test("a batch line's sent_at_ms is parsed as an absolute time in milliseconds")
    func batchFieldParses() throws {
        let line =
            #"{"kind":"call","to":"bob","call_id":"6F1C8A52-3B1E-4C7A-9D2E-5A4B3C2D1E0F","sent_at_ms":1799999880000}"#
        let request = try SendRequest.parse(line: line)
        #expect(request.sentAtMs == 1_799_999_880_000)
        #expect(request.kind == "call")
    }

    @Test("a batch line without sent_at_ms leaves the send time to the clock")
    func batchFieldIsOptional() throws {
        let request = try SendRequest.parse(line: #"{"kind":"text","to":"bob","body":"hi"}"#)
        #expect(request.sentAtMs == nil)
    }

    @Test(
        "a sent_at_ms that is not a non-negative integer is a bad request",
        arguments: [#""soon""#, "-5", "1.5", "true"]
    )
    func batchFieldRejectsNonIntegers(_ value: String) {
        let line = #"{"kind":"text","to":"bob","body":"hi","sent_at_ms":"# + value + "}"
        #expect(throws: SenderError(.badRequest, "")) { try SendRequest.parse(line: line) }
    }

    @Test("sent_at_ms round-trips through JSON under its snake_case key")
    func batchFieldEncodes() throws {
        var request = SendRequest(kind: "text", to: "bob")
        request.body = "hi"
        request.sentAtMs = 42
        let data = try JSONEncoder().encode(request)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["sent_at_ms"] as? Int == 42)
        #expect(try JSONDecoder().decode(SendRequest.self, from: data).sentAtMs == 42)
    }
}
