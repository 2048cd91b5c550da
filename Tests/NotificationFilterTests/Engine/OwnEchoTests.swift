import E2EECore
import Foundation
import TestSupport
import Testing

@testable import NotificationFilter

/// A message to one's own user goes to every device of the list, the sending one included (docs/PROTOCOL.md §11.7,
/// issue 21: a submit that skipped the sender named it). The sending device silences its own copy with
/// `own-echo` before any other rule: it never rings, alerts, shows a fallback, or counts as a cancel; the user's
/// other devices decide it as usual.
@Suite("Own echo: a device silences its own message to its own user")
struct OwnEchoTests {
    let users: MultiDeviceUsers
    let clock = TestClock(ms: MultiDeviceUsers.start)

    init() throws { self.users = try MultiDeviceUsers() }

    func filter(_ device: Identity) throws -> DeviceFilter {
        try DeviceFilter(
            device,
            ownList: self.users.bobList,
            contacts: [self.users.aliceList],
            statePath: try DeviceFilter.temporaryStatePath(),
            clock: self.clock
        )
    }

    @Test("every kind from the phone to bob: silence/own-echo on the phone, the usual decision on the tablet")
    func everyKind() async throws {
        let phone = try self.filter(self.users.bobPhone)
        let tablet = try self.filter(self.users.bobTablet)
        let callID = UUID()
        let now = self.clock.nowMs
        let kinds: [(String, MessageContent, Int64, String)] = [
            ("invite", MultiDeviceUsers.invite(callID), now, "ring/fresh-invite"),
            ("text", .text(TextMessage(threadID: "", title: "", body: "note to self")), now, "alert/text"),
            ("receipt", .receipt(Receipt(messageIDs: [.random()])), now, "silence/receipt"),
            // The tablet rang for the phone's own invite: its caller's cancel ends it.
            ("cancel", MultiDeviceUsers.cancel(callID, .answeredElsewhere), now, "silence/call-cancelled"),
            // Too old for the replay window, and too far ahead: still only an echo, never a fallback alert.
            (
                "stale text", .text(TextMessage(threadID: "", title: "", body: "old")), now - 3 * 86_400_000,
                "fallback/stale"
            ),
            (
                "future text", .text(TextMessage(threadID: "", title: "", body: "ahead")), now + 3_600_000,
                "fallback/clock"
            ),
        ]
        for (name, content, sentAt, onTablet) in kinds {
            let messageID = MessageID.random()
            let mine = try await phone.decide(
                self.users.body(
                    content,
                    from: self.users.bobPhone,
                    to: self.users.bobPhone,
                    sentAtMs: sentAt,
                    messageID: messageID
                )
            )
            #expect(mine.decision == .silence, "\(name)")
            #expect(mine.reason == .ownEcho, "\(name)")
            #expect(mine.alert == nil && mine.handoff == nil, "\(name)")
            #expect(mine.senderDevice == "phone", "\(name)")
            let theirs = try await tablet.decide(
                self.users.body(
                    content,
                    from: self.users.bobPhone,
                    to: self.users.bobTablet,
                    sentAtMs: sentAt,
                    messageID: messageID
                )
            )
            #expect("\(theirs.decision.rawValue)/\(theirs.reason.rawValue)" == onTablet, "\(name)")
        }
        #expect(phone.eventKinds.isEmpty)
        #expect(try phone.callState(callID) == nil)
        #expect(try phone.missedCalls().isEmpty)
        #expect(tablet.eventKinds == ["ringing", "ended"])
    }
}
