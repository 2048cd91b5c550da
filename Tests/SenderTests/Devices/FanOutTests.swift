import E2EECore
import Foundation
import Testing

@testable import Sender

/// Fan-out (docs/PROTOCOL.md §11.7): one envelope per device of the accepted list, each opening only on its device.
@Suite("Fan-out to every device of a user")
struct FanOutTests {
    static let text = MessageContent.text(TextMessage(threadID: "t", title: "Hi", body: "Lunch?"))

    @Test("two devices: two pushes to two tokens, one message id, each opens only with its own device's keys")
    func twoDevices() throws {
        let d = try Devices()
        let builder = PushBuilder(identity: d.alice)
        let id = MessageID.random()
        let pushes = try builder.fanOut(Self.text, to: d.v2, messageID: id, sentAtMs: 5)
        #expect(pushes.map(\.deviceID) == ["phone", "tablet"])
        let built = try pushes.map { try $0.outcome.get() }
        #expect(built.map(\.request.deviceToken) == [Devices.phoneToken, Devices.tabletToken])
        #expect(built.allSatisfy { $0.messageID == id && $0.request.headers["apns-topic"] == Devices.topic })
        #expect(built.map(\.deviceID) == ["phone", "tablet"])
        let senders = [try d.alice.card()]
        let onPhone = try Devices.open(built[0].request, with: d.phone, senders: senders)
        let onTablet = try Devices.open(built[1].request, with: d.tablet, senders: senders)
        #expect(onPhone.message.messageID == id && onTablet.message.messageID == id)
        #expect(onPhone.message.content == Self.text && onTablet.message.content == Self.text)
        #expect(onPhone.message.senderSigningKeyID == d.alice.signingKey.publicKey.keyID)
        #expect(throws: E2EEError.self) { try Devices.open(built[0].request, with: d.tablet, senders: senders) }
        #expect(throws: E2EEError.self) { try Devices.open(built[1].request, with: d.phone, senders: senders) }
    }

    @Test("a removed device gets nothing from the next send")
    func removedDevice() throws {
        let d = try Devices()
        let v3 = try DeviceManagement.remove(deviceID: "tablet", from: d.v2, signer: d.phone, nowMs: 60)
        #expect(v3.listVersion == 3)
        let pushes = try PushBuilder(identity: d.alice).fanOut(Self.text, to: v3)
        #expect(pushes.map(\.deviceID) == ["phone"])
        #expect(try pushes[0].outcome.get().request.deviceToken == Devices.phoneToken)
    }

    /// docs/PROTOCOL.md §11.7 (changed by issue 21): a message to one's own user goes to every device of the list,
    /// the sending one included, so the pushes do not tell which device sent it; the sender silences its echo.
    @Test(
        "sending to one's own user seals to every device, this one included; this one without a push address is skipped"
    )
    func ownDeviceIncluded() throws {
        let d = try Devices()
        let fromTablet = try PushBuilder(identity: d.tablet).fanOut(Self.text, to: d.v2)
        #expect(fromTablet.map(\.deviceID) == ["phone", "tablet"])
        #expect(fromTablet.allSatisfy { $0.skipped == nil })
        let echo = try fromTablet[1].outcome.get()
        #expect(echo.request.deviceToken == Devices.tabletToken)
        #expect(try Devices.open(echo.request, with: d.tablet, senders: [d.v2]).message.senderUserID == "bob")
        let fromPhone = try PushBuilder(identity: d.phone).fanOut(Self.text, to: d.v1)
        #expect(fromPhone.map(\.deviceID) == ["phone"])
        #expect(try fromPhone[0].outcome.get().request.deviceToken == Devices.phoneToken)
        // The phone's own entry without a push address: skipped (no failure), the tablet still sealed to.
        let phoneWithout = try d.v2.settingPush(nil, deviceID: "phone")
        let skipped = try PushBuilder(identity: d.phone).fanOut(Self.text, to: phoneWithout)
        #expect(skipped.map(\.skipped) == ["no-push-address", nil])
        #expect(try skipped[1].outcome.get().request.deviceToken == Devices.tabletToken)
        // Another user's device without one is still a failure of that device (a contact's card lacks it).
        let fromAlice = try PushBuilder(identity: d.alice).fanOut(Self.text, to: phoneWithout)
        #expect(fromAlice.map(\.skipped) == [nil, nil])
        #expect(throws: SenderError(.unknownRecipient, "")) { try fromAlice[0].outcome.get() }
    }

    @Test("a device token with several devices is a usage error naming the rule; with one device it overrides")
    func deviceTokenRule() throws {
        let d = try Devices()
        let token = String(repeating: "dd", count: 32)
        do {
            _ = try PushBuilder(identity: d.alice).fanOut(Self.text, to: d.v2, deviceToken: token)
            Issue.record("a token for two devices was taken")
        } catch {
            #expect(error.code == .usage)
            #expect(error.message.contains("bob has 2 (phone, tablet)"))
        }
        let one = try PushBuilder(identity: d.alice).fanOut(Self.text, to: d.v1, deviceToken: token)
        #expect(try one[0].outcome.get().request.deviceToken == token)
    }

    @Test("a device without a push address gets unknown-recipient; the others are sealed")
    func deviceWithoutPush() throws {
        let d = try Devices()
        let list = try d.v2.settingPush(nil, deviceID: "phone")
        let pushes = try PushBuilder(identity: d.alice).fanOut(Self.text, to: list)
        #expect(pushes.map(\.deviceID) == ["phone", "tablet"])
        guard case .failure(let error) = pushes[0].outcome else {
            Issue.record("the phone has no push address but got a push")
            return
        }
        #expect(error.code == .unknownRecipient)
        #expect(error.message.contains("bob's device \"phone\""))
        #expect(try pushes[1].outcome.get().request.deviceToken == Devices.tabletToken)
    }

    @Test("a device whose push service the sender cannot deliver to gets unsupported-push-service; the others go")
    func unsupportedPushService() throws {
        let d = try Devices()
        let fcm = PushAddress(service: PushService(rawValue: "fcm"), address: "fcm-registration-token")
        let list = try d.v2.settingPush(fcm, deviceID: "phone")
        let pushes = try PushBuilder(identity: d.alice).fanOut(Self.text, to: list)
        #expect(pushes.map(\.deviceID) == ["phone", "tablet"])
        guard case .failure(let error) = pushes[0].outcome else {
            Issue.record("the phone's address is fcm but it got an APNs push")
            return
        }
        #expect(error.code == .unsupportedPushService)
        #expect(error.message.contains("\"fcm\""))
        #expect(try pushes[1].outcome.get().request.deviceToken == Devices.tabletToken)

        try d.publish(list)
        var batch = BatchRequests(builder: PushBuilder(identity: d.alice), trust: try d.trust())
        let items = batch.prepare(line: #"{"kind":"text","to":"bob","body":"hi"}"#)
        #expect(items.count == 2)
        guard case .failed(let refused, "phone") = items[0] else {
            Issue.record("expected the phone's refusal, got \(items[0])")
            return
        }
        #expect(refused.code == .unsupportedPushService)
        guard case .deliver(_, _, "tablet") = items[1] else {
            Issue.record("expected the tablet's push, got \(items[1])")
            return
        }
    }

    @Test("batch: a line becomes one item per device; a refused recipient one failed item; the batch goes on")
    func batchFanOut() throws {
        let d = try Devices()
        var batch = BatchRequests(builder: PushBuilder(identity: d.alice), trust: try d.trust())
        let items = batch.prepare(line: #"{"kind":"text","to":"bob","body":"hi"}"#)
        #expect(items.count == 2)
        var devices: [String?] = []
        for item in items {
            guard case .deliver(let request, _, let device) = item else {
                Issue.record("not a push: \(item)")
                continue
            }
            devices.append(device)
            #expect((request as? APNsRequest)?.body.utf8.count == 2233)
        }
        #expect(devices == ["phone", "tablet"])
        // bob's card is now an older list: every later line to bob is refused, alice's still go.
        try d.publish(d.v1)
        var later = BatchRequests(builder: PushBuilder(identity: d.tablet), trust: try d.trust())
        let refused = later.prepare(line: #"{"kind":"text","to":"bob","body":"hi"}"#)
        guard refused.count == 1, case .failed(let error, .none) = refused[0] else {
            Issue.record("expected one refusal, got \(refused)")
            return
        }
        #expect(error.code == .listRollback)
        let token = later.prepare(
            line: #"{"kind":"text","to":"alice","body":"hi","device_token":"\#(Devices.tabletToken)"}"#
        )
        #expect(token.count == 1)
    }

    @Test("printed request lines name the device; deliver and the filter read them as request lines")
    func requestLineNamesDevice() throws {
        let d = try Devices()
        let pushes = try PushBuilder(identity: d.alice).fanOut(Self.text, to: d.v2)
        let request = try pushes[1].outcome.get().request
        let line = request.jsonLine(device: "tablet")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(json["device"] as? String == "tablet")
        #expect(Set(json.keys) == ["body", "device", "device_token", "headers"])
        #expect(try APNsRequest.parse(requestLine: line) == request)
        #expect(request.jsonLine(device: nil) == request.jsonLine())
    }
}
