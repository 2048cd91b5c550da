import E2EECore
import Foundation
import PushTransport
import Testing

@testable import Sender

/// The push-service seam of sending (docs/EXTENDING.md §2): ``PushBuilder`` seals each device's push with its
/// service's padding and frames it with that service's ``PushFormat``. A second service is one more format.
@Suite("Push formats")
struct PushFormatTests {
    /// A push of the "fake" service: the address and the sealed envelope, as its client would send them (a push
    /// read back from its request line keeps the address alone).
    struct FakePush: OutgoingPush {
        let address: String
        let envelope: Envelope?
        var service: PushService { PushService(rawValue: "fake") }
        func jsonLine(device: String?) -> String { "{\"fake\":\"\(self.address)\",\"service\":\"fake\"}" }
    }

    /// The "fake" service: addresses `tok-…` (stored lower-cased), one padding bucket of 512 bytes.
    struct FakeFormat: PushFormat {
        static let padding = PaddingTable([.classical: [512]])
        var service: PushService { PushService(rawValue: "fake") }
        var padding: PaddingTable { Self.padding }

        func checkedAddress(_ address: String) throws(SenderError) -> String {
            guard address.hasPrefix("tok-") else { throw SenderError(.badDeviceToken, "a fake address starts tok-") }
            return address.lowercased()
        }

        func destination(
            _ address: PushAddress?,
            overrides: PushOverrides,
            recipient: String
        ) throws(SenderError) -> @Sendable (SealedPush) -> any OutgoingPush {
            guard let given = overrides.address ?? address?.address else {
                throw SenderError(.unknownRecipient, "no fake address for \(recipient)")
            }
            let checked = try self.checkedAddress(given)
            return { FakePush(address: checked, envelope: $0.envelope) }
        }

        func request(fromLine line: String) throws(SenderError) -> any OutgoingPush {
            struct Line: Decodable {
                var fake: String
                var service: String
            }
            guard let read = try? JSONDecoder().decode(Line.self, from: Data(line.utf8)), read.service == "fake"
            else { throw SenderError(.badRequest, "not a fake request line") }
            return FakePush(address: read.fake, envelope: nil)
        }
    }

    static let text = MessageContent.text(TextMessage(threadID: "t", title: "Hi", body: "Lunch?"))
    static let fakeAddress = PushAddress(service: PushService(rawValue: "fake"), address: "tok-TABLET")

    /// Bob's list with the tablet on the fake service and the phone on APNs.
    static func mixed(_ d: Devices) throws -> DeviceList {
        try d.v2.settingPush(Self.fakeAddress, deviceID: "tablet")
    }

    @Test("two services: the APNs device gets an APNs request, the other device its format's push in its padding")
    func twoServices() throws {
        let d = try Devices()
        let list = try Self.mixed(d)
        let builder = PushBuilder(identity: d.alice, formats: [APNsFormat(), FakeFormat()])
        let pushes = try builder.fanOut(Self.text, to: list, sentAtMs: 5)
        #expect(pushes.map(\.deviceID) == ["phone", "tablet"])
        let phone = try pushes[0].outcome.get()
        let tablet = try pushes[1].outcome.get()
        #expect(phone.request.deviceToken == Devices.phoneToken)
        #expect(phone.request.headers["apns-topic"] == Devices.topic)
        #expect(phone.bucket == APNsAlertTransport.padding.buckets(for: .classical)[0])
        #expect(tablet.apnsRequest == nil)
        let fake = try #require(tablet.push as? FakePush)
        #expect(fake.address == "tok-tablet")
        #expect(tablet.bucket == 512)
        let envelope = try #require(fake.envelope)
        #expect(envelope.ciphertext.count == 512 + CryptoSuite.classical.tagLength)
        #expect(fake.jsonLine(device: "tablet") == "{\"fake\":\"tok-tablet\",\"service\":\"fake\"}")
        let book = ContactBook([try d.alice.card()])
        let opened = try PushPayload.open(
            envelope,
            deviceKey: { d.tablet.deviceKey(for: $0, nowMs: 2) },
            signingKey: { book.signingKey(userID: $0, keyID: $1) }
        )
        #expect(opened.message.content == Self.text)
        #expect(opened.message.messageID == phone.messageID)
    }

    @Test("a sender without the device's service refuses that device alone, naming the services it has")
    func unsupportedService() throws {
        let d = try Devices()
        let pushes = try PushBuilder(identity: d.alice).fanOut(Self.text, to: try Self.mixed(d))
        #expect(try pushes[0].outcome.get().request.deviceToken == Devices.phoneToken)
        #expect(throws: SenderError.self) { try pushes[1].outcome.get() }
        guard case .failure(let error) = pushes[1].outcome else { return }
        #expect(error.code == .unsupportedPushService)
        #expect(
            error.message
                == "bob's device \"tablet\" receives pushes through \"fake\"; this sender delivers through apns only"
        )
    }

    @Test("envelopes for a relay are padded for each device's service")
    func relayEnvelopes() throws {
        let d = try Devices()
        let list = try Self.mixed(d)
        let builder = PushBuilder(identity: d.alice, formats: [APNsFormat(), FakeFormat()])
        let envelopes = builder.sealEnvelopes(Self.text, to: list, devices: list.devices)
        #expect(
            try envelopes.map { try $0.outcome.get().bucket }
                == [APNsAlertTransport.padding.buckets(for: .classical)[0], 512]
        )
    }

    @Test("an address given for the send is checked by the device's service's format; without an address, the first's")
    func overrides() throws {
        let d = try Devices()
        let carol = try Identity.generate(userID: "carol", displayName: "Carol", nowMs: 1)
        let tabletOnly = try DeviceList.create(for: carol, push: Self.fakeAddress, nowMs: 10)
        let fakeFirst = PushBuilder(identity: d.alice, formats: [FakeFormat(), APNsFormat()])
        let given = try fakeFirst.fanOut(Self.text, to: tabletOnly, deviceToken: "tok-OTHER")
        #expect(try #require(try given[0].outcome.get().push as? FakePush).address == "tok-other")
        #expect(throws: SenderError(.badDeviceToken, "")) {
            try fakeFirst.fanOut(Self.text, to: tabletOnly, deviceToken: Devices.phoneToken)
        }
        // A device without an address and an address given: the first format's service.
        let bare = try tabletOnly.settingPush(nil, deviceID: tabletOnly.devices[0].deviceID)
        let toBare = try fakeFirst.fanOut(Self.text, to: bare, deviceToken: "tok-BARE")
        #expect(try #require(try toBare[0].outcome.get().push as? FakePush).address == "tok-bare")
        let apnsFirst = try PushBuilder(identity: d.alice, topic: Devices.topic)
            .fanOut(Self.text, to: bare, deviceToken: Devices.tabletToken)
        #expect(try apnsFirst[0].outcome.get().request.deviceToken == Devices.tabletToken)
    }

    @Test("deliver's request lines: each is read by the format of the service it names, an APNs line names none")
    func requestLines() throws {
        let d = try Devices()
        let builder = PushBuilder(identity: d.alice, formats: [APNsFormat(), FakeFormat()])
        let pushes = try builder.fanOut(Self.text, to: try Self.mixed(d), sentAtMs: 5)
        let apnsLine = try pushes[0].outcome.get().push.jsonLine(device: "phone")
        let fakeLine = try pushes[1].outcome.get().push.jsonLine(device: "tablet")
        let formats: [any PushFormat] = [APNsFormat(), FakeFormat()]
        #expect(BatchRequests.requestLineService(apnsLine) == nil)
        #expect(!BatchRequests.mentionsServiceKey(apnsLine))
        #expect(BatchRequests.mentionsServiceKey(#""service""#))
        // Escaped inside a string the key is `\"service\"`: no match, so no second decoding.
        #expect(!BatchRequests.mentionsServiceKey(#"{"a":"\"service\""}"#))
        #expect(!BatchRequests.mentionsServiceKey(#"{"servic":1,"services":2}"#))
        #expect(!BatchRequests.mentionsServiceKey(#""servic""#))
        #expect(BatchRequests.requestLineService(fakeLine) == PushService(rawValue: "fake"))

        let apns = BatchRequests.prepareRequestLine(apnsLine, formats: formats)
        guard case .deliver(let request, nil, nil) = try #require(apns.first), apns.count == 1 else {
            Issue.record("the APNs line gave \(apns)")
            return
        }
        #expect(request as? APNsRequest == (try pushes[0].outcome.get().apnsRequest))

        let fake = BatchRequests.prepareRequestLine(fakeLine, formats: formats)
        guard case .deliver(let push, nil, nil) = try #require(fake.first), fake.count == 1 else {
            Issue.record("the fake line gave \(fake)")
            return
        }
        #expect((push as? FakePush)?.address == "tok-tablet")

        // "service" inside a body or a header is not the line's: the APNs format reads the line.
        var quoted = try pushes[0].outcome.get().apnsRequest!
        quoted.headers["x-note"] = #""service":"fake""#
        let inHeader = BatchRequests.prepareRequestLine(quoted.jsonLine(), formats: formats)
        guard case .deliver(let read, nil, nil) = try #require(inHeader.first) else {
            Issue.record("the quoted line gave \(inHeader)")
            return
        }
        #expect(read as? APNsRequest == quoted)

        // A service without a format here, a fake line given only APNs, and a malformed line: one failure each.
        let refusals = [
            (#"{"fake":"tok-x","service":"third"}"#, formats, SenderError.Code.unsupportedPushService),
            (fakeLine, [APNsFormat()] as [any PushFormat], .unsupportedPushService),
            (#"{"service":"fake","fake":1}"#, formats, .badRequest),
            (#"{"body":"x","service":7}"#, formats, .badRequest),
        ]
        for (line, formats, code) in refusals {
            let items = BatchRequests.prepareRequestLine(line, formats: formats)
            guard case .failed(let error, nil) = try #require(items.first), items.count == 1 else {
                Issue.record("\(line) gave \(items)")
                continue
            }
            #expect(error.code == code, "\(line)")
        }
        let third = BatchRequests.prepareRequestLine(#"{"service":"third"}"#, formats: formats)
        guard case .failed(let error, _) = try #require(third.first) else { return }
        #expect(error.message == "the line is a request of third, and this sender delivers to apns, fake only")
    }
}
