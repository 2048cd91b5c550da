import E2EECore
import Foundation
import PushTransport
import Testing

@testable import Sender

/// The observer check per crypto suite (docs/PROTOCOL.md §16.3, §16.5): for one user with devices of both suites,
/// every kind gives the same headers and, within a suite, one body length.
@Suite("Uniform within each suite")
struct SuiteUniformityTests {
    @Test("a user with two classical and two X-Wing devices: per suite, four kinds, one body length and one header set")
    func mixedSuites() throws {
        let alice = try Identity.generate(userID: "alice", displayName: "Alice", nowMs: 1)
        let phone = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: 1)
        var list = try DeviceList.create(
            for: phone,
            push: PushAddress(APNsAddress(topic: "t", deviceToken: "00" + String(repeating: "ab", count: 31))),
            nowMs: 1
        )
        for (n, suite) in [(1, CryptoSuite.classical), (2, .xwing), (3, .xwing)] {
            let device = try Identity.generate(
                userID: "bob",
                displayName: "Bob",
                deviceID: "d\(n)",
                withUserKey: false,
                suite: suite,
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
        #expect(list.formatVersion == 3)
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
            .text(TextMessage(threadID: "t", title: "Hi", body: String(repeating: "x", count: 1024))),
            .receipt(Receipt(messageIDs: [.random()])),
        ]
        var lengthsBySuite: [UInt16: Set<Int>] = [:]
        var kindsBySuite: [UInt16: Set<String>] = [:]
        var headerSets = Set<[String: String]>()
        for content in contents {
            for push in try PushBuilder(identity: alice).fanOut(content, to: list) {
                let request = try push.outcome.get().request
                let suite = try APNsAlertTransport.envelope(fromBody: Array(request.body.utf8)).suite
                lengthsBySuite[suite.id, default: []].insert(request.body.utf8.count)
                kindsBySuite[suite.id, default: []].insert(content.kind.description)
                headerSets.insert(request.headers.filter { $0.key != "apns-id" })
            }
        }
        #expect(lengthsBySuite == [CryptoSuite.classical.id: [2233], CryptoSuite.xwing.id: [4093]])
        #expect(kindsBySuite.values.allSatisfy { $0.count == 4 })
        #expect(headerSets.count == 1)
    }

    @Test("a text too long for X-Wing's bucket is refused for the X-Wing device only, saying the limit")
    func tooLargeForXWingOnly() throws {
        let alice = try Identity.generate(userID: "alice", displayName: "Alice", nowMs: 1)
        let phone = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: 1)
        var list = try DeviceList.create(for: phone, push: nil, nowMs: 1)
        let tablet = try Identity.generate(
            userID: "bob",
            displayName: "Bob",
            deviceID: "tablet",
            withUserKey: false,
            suite: .xwing,
            nowMs: 1
        )
        list = try list.signingIn(try DeviceRequest.make(for: tablet, push: nil, nowMs: 2), signer: phone, nowMs: 2)
        let text = MessageContent.text(TextMessage(threadID: "", title: "", body: String(repeating: "x", count: 2000)))
        let sealed = PushBuilder(identity: alice).sealEnvelopes(text, to: list, devices: list.devices)
        #expect(sealed.map(\.deviceID) == ["phone", "tablet"])
        #expect(try sealed[0].outcome.get().bucket == 2932)
        #expect(throws: SenderError(.tooLarge, "")) { try sealed[1].outcome.get() }
        if case .failure(let error) = sealed[1].outcome {
            #expect(error.message.contains("the most a push carries is 1843"), "\(error.message)")
        }
    }
}
