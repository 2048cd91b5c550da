import APNsGateway
import E2EECore
import Foundation
import Testing

@testable import Sender

@Suite("Uniform by construction")
struct UniformityTests {
    /// The documented size up to which a text is indistinguishable from a call (docs/PROTOCOL.md §6): a text whose
    /// title + body + thread id stay under ~1,400 bytes. We test up to 1,024 bytes of body with a short title.
    static let documentedTextBody = 1024

    @Test("1,000 mixed calls, cancels, receipts and texts: identical headers but apns-id, one body length")
    func thousandMixedPushes() async throws {
        let alice = try Identity.generate(userID: "alice", displayName: "Alice Example", nowMs: 1)
        let bob = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1)
        let card = try bob.card(
            push: PushAddress(APNsAddress(topic: GatewayHarness.topic, deviceToken: GatewayHarness.deviceToken))
        )
        let builder = PushBuilder(identity: alice, topic: GatewayHarness.topic)
        var rng = SystemRandomNumberGenerator()
        var kinds: [String] = []
        var requests: [APNsRequest] = []
        for i in 0..<1000 {
            let content: MessageContent
            switch i % 4 {
            case 0:
                content = .callInvite(
                    CallInvite(
                        callID: UUID(),
                        callerHandle: "alice",
                        displayName: String(repeating: "A", count: Int.random(in: 0...64, using: &rng)),
                        hasVideo: i % 8 == 0,
                        ringTimeoutSeconds: UInt16.random(in: 10...120, using: &rng),
                        groupParticipants: (0..<Int.random(in: 0...4, using: &rng)).map { "p\($0)" }
                    )
                )
            case 1:
                content = .callCancel(
                    CallCancel(callID: UUID(), reason: CallCancelReason.allCases.randomElement(using: &rng)!)
                )
            case 2:
                content = .receipt(
                    Receipt(messageIDs: (0..<Int.random(in: 1...20, using: &rng)).map { _ in MessageID.random() })
                )
            default:
                content = .text(
                    TextMessage(
                        threadID: "thread-\(i)",
                        title: String(repeating: "t", count: Int.random(in: 0...40, using: &rng)),
                        body: String(
                            repeating: "é",
                            count: Int.random(in: 0...(Self.documentedTextBody / 2), using: &rng)
                        )
                    )
                )
            }
            kinds.append(content.kind.description)
            requests.append(try builder.build(content, to: card).request)
        }

        try await GatewayHarness.with { gateway in
            // Generous deadlines: this test also runs under ThreadSanitizer, several times slower.
            let client = try gateway.makeClient(window: 100, streamTimeout: .seconds(300))
            let results = await client.send(requests)
            #expect(results.count == 1000)
            #expect(results.allSatisfy { $0.status == 200 }, "\(results.filter { $0.status != 200 }.prefix(3))")
            let records = gateway.sink.records
            #expect(records.count == 1000)

            // What the relay and Apple saw: headers identical except apns-id (and the device token in the path and
            // the authorization header, which the gateway does not record).
            let headerSets = Set(records.map { record in record.headers.filter { $0.key != "apns-id" } })
            #expect(headerSets.count == 1)
            #expect(
                headerSets.first == [
                    "apns-push-type": "alert", "apns-priority": "10", "apns-expiration": "0",
                    "apns-topic": GatewayHarness.topic,
                ]
            )
            #expect(records.allSatisfy { $0.headers["apns-collapse-id"] == nil })
            #expect(Set(records.map(\.apnsID)).count == 1000)

            // Body lengths: one value for every kind, so length cannot separate calls from texts.
            let lengthsByKind = Dictionary(grouping: zip(kinds, requests.map(\.body.utf8.count)), by: \.0)
                .mapValues { Set($0.map(\.1)) }
            #expect(lengthsByKind.count == 4)
            for (kind, lengths) in lengthsByKind { #expect(lengths == [2233], "kind \(kind)") }
            // And what arrived is what was sent, byte for byte.
            let sent = Dictionary(uniqueKeysWithValues: requests.map { ($0.apnsID!, $0.body) })
            #expect(records.allSatisfy { sent[$0.apnsID] == $0.body })
        }
    }

    @Test("fan-out to N devices: every push of every kind has the same headers but apns-id, and one body length")
    func fanOutIsUniform() throws {
        let alice = try Identity.generate(userID: "alice", displayName: "Alice", nowMs: 1)
        let phone = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: 1)
        var list = try DeviceList.create(
            for: phone,
            push: PushAddress(APNsAddress(topic: "t", deviceToken: "00" + String(repeating: "ab", count: 31))),
            nowMs: 1
        )
        for n in 1..<4 {
            let device = try Identity.generate(
                userID: "bob",
                displayName: "Bob",
                deviceID: "d\(n)",
                withUserKey: false,
                nowMs: 1
            )
            let token = String(format: "%02x", n) + String(repeating: "ab", count: 31)
            list = try list.signingIn(
                try DeviceRequest.make(
                    for: device,
                    push: PushAddress(APNsAddress(topic: "t", deviceToken: token)),
                    nowMs: 2
                ),
                signer: phone,
                nowMs: 2
            )
        }
        let contents: [MessageContent] = [
            .callInvite(
                CallInvite(
                    callID: UUID(),
                    callerHandle: "alice",
                    displayName: "Alice",
                    hasVideo: true,
                    ringTimeoutSeconds: 30
                )
            ),
            .callCancel(CallCancel(callID: UUID(), reason: .answeredElsewhere)),
            .text(
                TextMessage(threadID: "t", title: "Hi", body: String(repeating: "x", count: Self.documentedTextBody))
            ),
            .receipt(Receipt(messageIDs: [.random()])),
        ]
        var requests: [APNsRequest] = []
        for content in contents {
            let pushes = try PushBuilder(identity: alice).fanOut(content, to: list)
            #expect(pushes.count == 4)
            requests += try pushes.map { try $0.outcome.get().request }
        }
        #expect(requests.count == 16)
        #expect(Set(requests.map { $0.headers.filter { $0.key != "apns-id" } }).count == 1)
        #expect(Set(requests.map(\.apnsID)).count == 16)
        #expect(Set(requests.map(\.body.utf8.count)) == [2233])
        #expect(Set(requests.map(\.deviceToken)).count == 4)
    }

    @Test("the same headers for every kind come from one function that does not know the kind")
    func headerFunction() {
        let a = PushBuilder.uniformHeaders(topic: "t")
        let b = PushBuilder.uniformHeaders(topic: "t")
        #expect(a.filter { $0.key != "apns-id" } == b.filter { $0.key != "apns-id" })
        #expect(a["apns-id"] != b["apns-id"])
        #expect(Set(a.keys) == ["apns-push-type", "apns-priority", "apns-expiration", "apns-topic", "apns-id"])
    }

    @Test("a text beyond the small bucket uses the large one; beyond APNs' limit it is refused with a clear error")
    func largeTexts() throws {
        let alice = try Identity.generate(userID: "alice", displayName: "Alice", nowMs: 1)
        let bob = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1)
        let card = try bob.card(push: PushAddress(APNsAddress(topic: "t", deviceToken: GatewayHarness.deviceToken)))
        let builder = PushBuilder(identity: alice, topic: "t")
        let large = try builder.build(
            .text(TextMessage(threadID: "", title: "", body: String(repeating: "x", count: 2000))),
            to: card
        )
        #expect(large.request.body.utf8.count == 4093)
        #expect(large.bucket == 2932)
        #expect(throws: SenderError(.tooLarge, "")) {
            try builder.build(
                .text(TextMessage(threadID: "", title: "", body: String(repeating: "x", count: 3000))),
                to: card
            )
        }
    }

    @Test(
        "bad device tokens are refused before anything is sealed",
        arguments: ["", "abc", "zz" + String(repeating: "a", count: 62), String(repeating: "a", count: 63)]
    )
    func badTokens(token: String) throws {
        let alice = try Identity.generate(userID: "alice", displayName: "Alice", nowMs: 1)
        let bob = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1)
        #expect(throws: SenderError(.badDeviceToken, "")) {
            try PushBuilder(identity: alice, topic: "t").build(
                .text(TextMessage(threadID: "", title: "", body: "x")),
                to: try bob.card(),
                deviceToken: token
            )
        }
    }
}
