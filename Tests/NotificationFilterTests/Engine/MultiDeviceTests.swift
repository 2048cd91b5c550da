import E2EECore
import Foundation
import TestSupport
import Testing

@testable import NotificationFilter

/// docs/PROTOCOL.md §15.1 on the device side: bob has a phone and a tablet, alice a phone and a laptop.
@Suite("Several devices: calls across devices")
struct MultiDeviceTests {
    let users: MultiDeviceUsers
    let clock = TestClock(ms: MultiDeviceUsers.start)

    init() throws { self.users = try MultiDeviceUsers() }

    /// Bob's phone or tablet: own list bob's, contacts alice and carol.
    func bob(_ device: Identity, statePath: String? = nil) throws -> DeviceFilter {
        try DeviceFilter(
            device,
            ownList: self.users.bobList,
            contacts: [self.users.aliceList, self.users.carolList],
            statePath: try statePath ?? DeviceFilter.temporaryStatePath(),
            clock: self.clock
        )
    }

    func seal(_ content: MessageContent, from: Identity, to: Identity) throws -> [UInt8] {
        try self.users.body(content, from: from, to: to, sentAtMs: self.clock.nowMs)
    }

    @Test("an invite from alice's laptop rings on bob's phone and tablet; each decision names the sending device")
    func inviteRingsOnEveryDevice() async throws {
        let phone = try self.bob(self.users.bobPhone)
        let tablet = try self.bob(self.users.bobTablet)
        let callID = UUID()
        for device in [phone, tablet] {
            let d = try await device.decide(
                self.seal(MultiDeviceUsers.invite(callID), from: self.users.aliceLaptop, to: device.identity)
            )
            #expect(d.decision == .ring)
            #expect(d.reason == .freshInvite)
            #expect(d.senderDevice == "laptop")
            #expect(d.jsonLine().contains("\"sender_device\":\"laptop\""))
            #expect(device.eventKinds == ["ringing"])
        }
    }

    @Test("the own list is a contact: a text from bob's tablet opens on bob's phone, named by its device")
    func ownOtherDeviceIsAContact() async throws {
        let phone = try self.bob(self.users.bobPhone)
        let text = MessageContent.text(TextMessage(threadID: "", title: "", body: "from my tablet"))
        let d = try await phone.decide(self.seal(text, from: self.users.bobTablet, to: self.users.bobPhone))
        #expect(d.decision == .alert)
        #expect(d.senderDevice == "tablet")
        #expect(d.alert?.title == "Bob")
        // Without the own list, the tablet is an unknown sender.
        let withoutOwn = try DeviceFilter(
            self.users.bobPhone,
            ownList: self.users.aliceList,  // any list but bob's
            contacts: [self.users.carolList],
            statePath: try DeviceFilter.temporaryStatePath(),
            clock: self.clock
        )
        let unknown = try await withoutOwn.decide(self.seal(text, from: self.users.bobTablet, to: self.users.bobPhone))
        #expect(unknown.reason == .unknownSender)
    }

    @Test(
        "answered or declined on the tablet: the phone stops ringing, ended with that reason, no missed call",
        arguments: [
            (CallCancelReason.answeredElsewhere, FilterReason.answeredElsewhere),
            (.declinedElsewhere, .declinedElsewhere),
        ]
    )
    func elsewhereEndsRingingCall(reason: CallCancelReason, expected: FilterReason) async throws {
        let phone = try self.bob(self.users.bobPhone)
        let callID = UUID()
        let ring = try await phone.decide(
            self.seal(MultiDeviceUsers.invite(callID), from: self.users.alicePhone, to: self.users.bobPhone)
        )
        #expect(ring.decision == .ring)
        let cancel = try await phone.decide(
            self.seal(MultiDeviceUsers.cancel(callID, reason), from: self.users.bobTablet, to: self.users.bobPhone)
        )
        #expect(cancel.decision == .silence)
        #expect(cancel.reason == expected)
        #expect(cancel.senderDevice == "tablet")
        #expect(cancel.alert == nil)
        #expect(phone.eventKinds == ["ringing", "ended"])
        #expect(phone.events.events.last?.reason == .ended(CallEndedReason(reason)))
        #expect(try phone.missedCalls().isEmpty)
        #expect(try phone.callState(callID)?.state == .ended)
        #expect(await phone.reporter.provider.liveCalls.isEmpty)
        // The caller's late hang-up changes nothing more.
        let late = try await phone.decide(
            self.seal(MultiDeviceUsers.cancel(callID, .remoteEnded), from: self.users.alicePhone, to: phone.identity)
        )
        #expect(late.reason == .cancelForEndedCall)
        #expect(try phone.missedCalls().isEmpty)
    }

    @Test(
        "answered or declined elsewhere BEFORE the invite arrives: the late invite never rings, no missed call",
        arguments: [
            (CallCancelReason.answeredElsewhere, FilterReason.answeredElsewhere),
            (.declinedElsewhere, .declinedElsewhere),
        ]
    )
    func elsewhereBeforeInvite(reason: CallCancelReason, expected: FilterReason) async throws {
        let tablet = try self.bob(self.users.bobTablet)
        let callID = UUID()
        let early = try await tablet.decide(
            self.seal(MultiDeviceUsers.cancel(callID, reason), from: self.users.bobPhone, to: self.users.bobTablet)
        )
        #expect(early.decision == .silence)
        #expect(early.reason == .cancelForUnknownCall)
        let invite = try await tablet.decide(
            self.seal(MultiDeviceUsers.invite(callID), from: self.users.alicePhone, to: self.users.bobTablet)
        )
        #expect(invite.decision == .silence)
        #expect(invite.reason == expected)
        #expect(invite.alert == nil)
        #expect(tablet.eventKinds.isEmpty)
        #expect(try tablet.missedCalls().isEmpty)
        #expect(await tablet.reporter.reporter.counters.handoffs == 0)
        #expect(try tablet.callState(callID)?.state == .ended)
        // A retry of the invite is a duplicate, not a ring.
        let retry = try await tablet.decide(
            self.seal(MultiDeviceUsers.invite(callID), from: self.users.alicePhone, to: self.users.bobTablet)
        )
        #expect(retry.reason == .duplicateCall)
        #expect(tablet.eventKinds.isEmpty)
    }

    @Test("the caller's own early hang-up wins over an answer elsewhere: the late invite is a missed call")
    func callerEarlyCancelWins() async throws {
        let tablet = try self.bob(self.users.bobTablet)
        let callID = UUID()
        _ = try await tablet.decide(
            self.seal(MultiDeviceUsers.cancel(callID, .remoteEnded), from: self.users.aliceLaptop, to: tablet.identity)
        )
        _ = try await tablet.decide(
            self.seal(
                MultiDeviceUsers.cancel(callID, .answeredElsewhere),
                from: self.users.bobPhone,
                to: tablet.identity
            )
        )
        let invite = try await tablet.decide(
            self.seal(MultiDeviceUsers.invite(callID), from: self.users.alicePhone, to: tablet.identity)
        )
        #expect(invite.decision == .missedCall)
        #expect(invite.reason == .cancelledBeforeInvite)
    }

    @Test(
        "an elsewhere cancel from this device itself (own-echo), a remoteEnded from the other device, or carol: nothing changes"
    )
    func unauthorisedCancels() async throws {
        let phone = try self.bob(self.users.bobPhone)
        let callID = UUID()
        _ = try await phone.decide(
            self.seal(MultiDeviceUsers.invite(callID), from: self.users.alicePhone, to: phone.identity)
        )
        let attempts: [(Identity, CallCancelReason, FilterReason)] = [
            // This device's own cancels come back to it: a message to one's own user goes to every device of it,
            // the sender's included (docs/PROTOCOL.md §11.7), and the sender silences its echo first.
            (self.users.bobPhone, .answeredElsewhere, .ownEcho), (self.users.bobPhone, .declinedElsewhere, .ownEcho),
            (self.users.bobPhone, .remoteEnded, .ownEcho),
            (self.users.bobTablet, .remoteEnded, .cancelNotFromCaller),
            (self.users.carol, .answeredElsewhere, .cancelNotFromCaller),
            (self.users.carol, .declinedElsewhere, .cancelNotFromCaller),
        ]
        for (sender, reason, expected) in attempts {
            let d = try await phone.decide(
                self.seal(MultiDeviceUsers.cancel(callID, reason), from: sender, to: phone.identity)
            )
            #expect(d.decision == .silence)
            #expect(d.reason == expected, "\(sender.userID)/\(sender.deviceID) \(reason)")
        }
        #expect(phone.eventKinds == ["ringing"])
        #expect(try phone.callState(callID)?.state == .ringing)
        // This device's own elsewhere cancel before an invite is not remembered either: the invite rings.
        let other = UUID()
        let own = try await phone.decide(
            self.seal(MultiDeviceUsers.cancel(other, .answeredElsewhere), from: self.users.bobPhone, to: phone.identity)
        )
        #expect(own.reason == .ownEcho)
        let invite = try await phone.decide(
            self.seal(MultiDeviceUsers.invite(other), from: self.users.alicePhone, to: phone.identity)
        )
        #expect(invite.decision == .ring)
        // Any device of the inviter ends the call: alice's laptop hangs up alice's phone's call.
        let hangUp = try await phone.decide(
            self.seal(MultiDeviceUsers.cancel(callID, .remoteEnded), from: self.users.aliceLaptop, to: phone.identity)
        )
        #expect(hangUp.reason == .callCancelled)
        #expect(try phone.missedCalls().map(\.callID) == [callID])
    }

    @Test("caller's side: bob's decline reaches alice's phone as declined-by-callee with a remote-declined event")
    func declinedByCallee() async throws {
        let alice = try DeviceFilter(
            self.users.alicePhone,
            ownList: self.users.aliceList,
            contacts: [self.users.bobList],
            statePath: try DeviceFilter.temporaryStatePath(),
            clock: self.clock
        )
        let callID = UUID()
        let d = try await alice.decide(
            self.seal(
                MultiDeviceUsers.cancel(callID, .declinedElsewhere),
                from: self.users.bobTablet,
                to: self.users.alicePhone
            )
        )
        #expect(d.decision == .silence)
        #expect(d.reason == .declinedByCallee)
        #expect(d.senderDevice == "tablet")
        #expect(alice.eventKinds == ["remote-declined"])
        let event = try #require(alice.events.events.first)
        #expect(event.callID == callID.uuidString)
        #expect(event.byUser == "bob")
        #expect(event.byDevice == "tablet")
        #expect(event.account == "alice")
        // An answeredElsewhere from bob for an unknown call is only a cancel before its invite.
        let answered = try await alice.decide(
            self.seal(
                MultiDeviceUsers.cancel(UUID(), .answeredElsewhere),
                from: self.users.bobPhone,
                to: alice.identity
            )
        )
        #expect(answered.reason == .cancelForUnknownCall)
        // A decline from alice's own laptop is her own user's: not a callee's decline.
        let own = try await alice.decide(
            self.seal(
                MultiDeviceUsers.cancel(UUID(), .declinedElsewhere),
                from: self.users.aliceLaptop,
                to: alice.identity
            )
        )
        #expect(own.reason == .cancelForUnknownCall)
        #expect(alice.eventKinds == ["remote-declined"])
    }

    // MARK: answer and decline

    @Test("answer: ringing → active, `answered`, one answeredElsewhere line to bob; the caller's hang-up ends it")
    func answer() async throws {
        let phone = try self.bob(self.users.bobPhone)
        let callID = UUID()
        _ = try await phone.decide(
            self.seal(MultiDeviceUsers.invite(callID), from: self.users.alicePhone, to: phone.identity)
        )
        let outcome = try await phone.engine.perform(.answer, callID: callID)
        #expect(
            outcome.requestLines == [
                "{\"call_id\":\"\(callID.uuidString)\",\"kind\":\"cancel\",\"reason\":\"answeredElsewhere\",\"to\":\"bob\"}"
            ]
        )
        #expect(try phone.callState(callID)?.state == .active)
        #expect(try await phone.engine.applyCallActions() == 1)
        #expect(try await phone.engine.applyCallActions() == 0, "applied once")
        #expect(phone.eventKinds == ["ringing", "answered"])
        #expect(await phone.reporter.provider.call(callID)?.state == .active)
        // The ring window passing does not make an answered call missed.
        self.clock.advance(ms: 120_000)
        try await phone.engine.expireRinging()
        #expect(phone.eventKinds == ["ringing", "answered"])
        // The tablet's answer arriving here too changes nothing: answered here.
        let tabletAnswer = try await phone.decide(
            self.seal(
                MultiDeviceUsers.cancel(callID, .answeredElsewhere),
                from: self.users.bobTablet,
                to: phone.identity
            )
        )
        #expect(tabletAnswer.reason == .cancelForAnsweredCall)
        #expect(try phone.callState(callID)?.state == .active)
        // The caller hangs up: ended, not missed.
        let hangUp = try await phone.decide(
            self.seal(MultiDeviceUsers.cancel(callID, .remoteEnded), from: self.users.alicePhone, to: phone.identity)
        )
        #expect(hangUp.reason == .callCancelled)
        #expect(phone.eventKinds == ["ringing", "answered", "ended"])
        #expect(phone.events.events.last?.reason == .ended(.remoteEnded))
        #expect(try phone.missedCalls().isEmpty)
        // Answering again: not ringing.
        await #expect(throws: FilterError(code: .invalidAction, message: "")) {
            _ = try await phone.engine.perform(.answer, callID: callID)
        }
    }

    @Test("decline: ringing → ended, `declined`, declinedElsewhere lines to bob and to alice; never missed")
    func decline() async throws {
        let phone = try self.bob(self.users.bobPhone)
        let callID = UUID()
        _ = try await phone.decide(
            self.seal(MultiDeviceUsers.invite(callID), from: self.users.aliceLaptop, to: phone.identity)
        )
        let outcome = try await phone.engine.perform(.decline, callID: callID, account: "bob")
        #expect(outcome.requestLines.count == 2)
        #expect(outcome.requestLines.allSatisfy { $0.contains("\"reason\":\"declinedElsewhere\"") })
        #expect(outcome.requestLines.map { JSONLinesTo.recipient($0) } == ["bob", "alice"])
        #expect(try phone.callState(callID)?.state == .ended)
        #expect(try phone.callState(callID)?.endReason == .ended(.declined))
        try await phone.engine.applyCallActions()
        #expect(phone.eventKinds == ["ringing", "declined"])
        self.clock.advance(ms: 120_000)
        try await phone.engine.expireRinging()
        let hangUp = try await phone.decide(
            self.seal(MultiDeviceUsers.cancel(callID, .remoteEnded), from: self.users.alicePhone, to: phone.identity)
        )
        #expect(hangUp.reason == .cancelForEndedCall)
        #expect(phone.eventKinds == ["ringing", "declined"])
        #expect(try phone.missedCalls().isEmpty)
        await #expect(throws: FilterError(code: .invalidAction, message: "")) {
            _ = try await phone.engine.perform(.answer, callID: callID)
        }
    }

    @Test("answer or decline of a call id that never rang, or of another account: a clear error, nothing changes")
    func actionErrors() async throws {
        let phone = try self.bob(self.users.bobPhone)
        await #expect(throws: FilterError(code: .unknownCallUUID, message: "")) {
            _ = try await phone.engine.perform(.answer, callID: UUID())
        }
        await #expect(throws: FilterError(code: .unknownAccount, message: "")) {
            _ = try await phone.engine.perform(.decline, callID: UUID(), account: "carol")
        }
        do {
            _ = try await phone.engine.perform(.answer, callID: UUID())
        } catch let error as FilterError {
            #expect(error.message.contains("never rang on this device"))
        }
        #expect(try await phone.engine.applyCallActions() == 0)
    }

    @Test("restart: an answered call stays answered (the caller's hang-up ends it as ended, never missed)")
    func answerSurvivesRestart() async throws {
        let statePath = try DeviceFilter.temporaryStatePath()
        let callID = UUID()
        do {
            let phone = try self.bob(self.users.bobPhone, statePath: statePath)
            _ = try await phone.decide(
                self.seal(MultiDeviceUsers.invite(callID), from: self.users.alicePhone, to: phone.identity)
            )
            _ = try await phone.engine.perform(.answer, callID: callID)
            try await phone.engine.applyCallActions()
            #expect(phone.eventKinds == ["ringing", "answered"])
        }
        let restarted = try self.bob(self.users.bobPhone, statePath: statePath)
        try await restarted.engine.recoverAfterRestart()
        #expect(restarted.eventKinds.isEmpty, "no event repeated: \(restarted.eventKinds)")
        #expect(await restarted.reporter.provider.call(callID)?.state == .active)
        let hangUp = try await restarted.decide(
            self.seal(
                MultiDeviceUsers.cancel(callID, .remoteEnded),
                from: self.users.alicePhone,
                to: restarted.identity
            )
        )
        #expect(hangUp.reason == .callCancelled)
        #expect(restarted.eventKinds == ["ended"])
        #expect(try restarted.missedCalls().isEmpty)
    }

    @Test("restart: a decline recorded while no filter ran is applied once at start: `declined`, never missed")
    func declineAppliedAfterRestart() async throws {
        let statePath = try DeviceFilter.temporaryStatePath()
        let callID = UUID()
        do {
            let phone = try self.bob(self.users.bobPhone, statePath: statePath)
            _ = try await phone.decide(
                self.seal(MultiDeviceUsers.invite(callID), from: self.users.alicePhone, to: phone.identity)
            )
        }
        do {
            // `e2ee-filter decline` in its own process: records, never applies.
            let cli = try self.bob(self.users.bobPhone, statePath: statePath)
            _ = try await cli.engine.perform(.decline, callID: callID)
            #expect(cli.eventKinds.isEmpty)
        }
        let restarted = try self.bob(self.users.bobPhone, statePath: statePath)
        try await restarted.engine.recoverAfterRestart()
        #expect(restarted.eventKinds == ["declined"])
        #expect(try restarted.missedCalls().isEmpty)
        let again = try self.bob(self.users.bobPhone, statePath: statePath)
        try await again.engine.recoverAfterRestart()
        #expect(again.eventKinds.isEmpty, "applied once: \(again.eventKinds)")
    }

    @Test("an answer recorded by another process is applied before a later hang-up is: ended, never missed")
    func answerAppliedBeforeCancel() async throws {
        let statePath = try DeviceFilter.temporaryStatePath()
        let daemon = try self.bob(self.users.bobPhone, statePath: statePath)
        let callID = UUID()
        _ = try await daemon.decide(
            self.seal(MultiDeviceUsers.invite(callID), from: self.users.alicePhone, to: daemon.identity)
        )
        let cli = try self.bob(self.users.bobPhone, statePath: statePath)
        _ = try await cli.engine.perform(.answer, callID: callID)
        // No tick in between: the hang-up's batch applies the answer first.
        _ = try await daemon.decide(
            self.seal(MultiDeviceUsers.cancel(callID, .remoteEnded), from: self.users.alicePhone, to: daemon.identity)
        )
        #expect(daemon.eventKinds == ["ringing", "answered", "ended"])
        #expect(try daemon.missedCalls().isEmpty)
    }
}

/// Reads the `to` of a request line.
enum JSONLinesTo {
    static func recipient(_ line: String) -> String? {
        ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["to"] as? String
    }
}
