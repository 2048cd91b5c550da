@_spi(Vectors) import E2EECore
import Foundation
import PushTransport
import TestSupport
import Testing

@testable import NotificationFilter

@Suite("Decision rules (one test per rule)")
struct DecisionRuleTests {
    @Test("fresh call invite → ring; the handoff carries call id, handle, name, video and account")
    func freshInviteRings() async throws {
        let h = try EngineHarness()
        let callID = UUID()
        let d = try await h.decide(h.body(EngineHarness.invite(callID, video: true)))
        #expect(d.decision == .ring)
        #expect(d.reason == .freshInvite)
        #expect(d.kind == "call-invite")
        #expect(d.handoff?.callID == callID)
        #expect(d.handoff?.callerHandle == "alice")
        #expect(d.handoff?.displayName == "Alice Example")
        #expect(d.handoff?.hasVideo == true)
        #expect(d.handoff?.account == "bob")
        #expect(d.alert == nil)
        #expect(h.eventKinds() == ["ringing"])
        #expect(h.events.events.first?.callID == callID.uuidString)
        #expect(await h.reporter.violations == 0)
        #expect(await h.reporter.reporter.counters.handoffs == 1)
    }

    @Test("invite older than its ring timeout → no ring, missed-call alert naming the caller, recorded")
    func staleInviteIsMissed() async throws {
        let h = try EngineHarness()
        let callID = UUID()
        // 30 s timeout + 30 s skew allowance: sent 61 s ago is too late, 59 s ago still rings.
        let late: FilterDecision = try await h.decide(
            h.body(EngineHarness.invite(callID), sentAtMs: h.clock.nowMs - 61_000)
        )
        #expect(late.decision == .missedCall)
        #expect(late.reason == .inviteExpired)
        #expect(late.alert?.body == "Alice Example called you")
        #expect(h.eventKinds().isEmpty)
        let missed = try h.store.transaction { tx in try tx.missedCalls(account: "bob") }
        #expect(missed.map(\.callID) == [callID])
        #expect(missed.first?.reason == .decision(.inviteExpired))
        let ok: FilterDecision = try await h.decide(
            h.body(EngineHarness.invite(UUID()), sentAtMs: h.clock.nowMs - 59_000)
        )
        #expect(ok.decision == .ring)
        #expect(await h.reporter.violations == 0)
    }

    @Test("invite for a call id already ringing, or already ended → no second ring")
    func duplicateCallNeverRingsTwice() async throws {
        let h = try EngineHarness()
        let callID = UUID()
        #expect(try await h.decide(h.body(EngineHarness.invite(callID))).decision == .ring)
        // A retry of the invite (new message id, same call id) while ringing.
        let again = try await h.decide(h.body(EngineHarness.invite(callID)))
        #expect(again.decision == .silence)
        #expect(again.reason == .duplicateCall)
        // End it, then the invite arrives once more.
        _ = try await h.decide(h.body(.callCancel(CallCancel(callID: callID, reason: .answeredElsewhere))))
        let afterEnd = try await h.decide(h.body(EngineHarness.invite(callID)))
        #expect(afterEnd.reason == .duplicateCall)
        #expect(h.eventKinds().filter { $0 == "ringing" }.count == 1)
        #expect(await h.reporter.violations == 0)
    }

    @Test("cancel of a ringing call → the reporter ends it with the cancel's reason; notification silenced")
    func cancelEndsRingingCall() async throws {
        let h = try EngineHarness()
        let callID = UUID()
        _ = try await h.decide(h.body(EngineHarness.invite(callID)))
        let cancel = try await h.decide(h.body(.callCancel(CallCancel(callID: callID, reason: .answeredElsewhere))))
        #expect(cancel.decision == .silence)
        #expect(cancel.reason == .callCancelled)
        #expect(cancel.kind == "call-cancel")
        #expect(h.eventKinds() == ["ringing", "ended"])
        #expect(h.events.events.last?.reason == .ended(.answeredElsewhere))
        #expect(await h.reporter.provider.liveCalls.isEmpty)
        let state = try h.store.transaction { tx in try tx.callState(account: "bob", callID: callID) }
        #expect(state?.state == .ended)
    }

    @Test("the caller hanging up while ringing → ended as remoteEnded, logged as missed")
    func remoteEndedWhileRingingIsMissed() async throws {
        let h = try EngineHarness()
        let callID = UUID()
        _ = try await h.decide(h.body(EngineHarness.invite(callID)))
        _ = try await h.decide(h.body(.callCancel(CallCancel(callID: callID, reason: .remoteEnded))))
        #expect(h.eventKinds() == ["ringing", "missed"])
        let missed = try h.store.transaction { tx in try tx.missedCalls(account: "bob") }
        #expect(missed.map(\.callID) == [callID])
    }

    @Test("a cancel that arrives BEFORE its invite turns the late invite into a missed call, not a ring")
    func cancelBeforeInvite() async throws {
        let h = try EngineHarness()
        let callID = UUID()
        let cancel = try await h.decide(h.body(.callCancel(CallCancel(callID: callID, reason: .remoteEnded))))
        #expect(cancel.decision == .silence)
        #expect(cancel.reason == .cancelForUnknownCall)
        let invite = try await h.decide(h.body(EngineHarness.invite(callID)))
        #expect(invite.decision == .missedCall)
        #expect(invite.reason == .cancelledBeforeInvite)
        #expect(h.eventKinds().isEmpty)
        #expect(await h.reporter.reporter.counters.handoffs == 0)
    }

    @Test("a cancel from another contact (carol) leaves alice's call to bob ringing: cancel-not-from-caller")
    func cancelFromAnotherUserIsIgnored() async throws {
        let h = try EngineHarness()
        let callID = UUID()
        let invite = try await h.decide(h.body(EngineHarness.invite(callID)))
        #expect(invite.decision == .ring)
        for reason in [CallCancelReason.remoteEnded, .answeredElsewhere, .declinedElsewhere] {
            let forged = try await h.decide(
                h.body(.callCancel(CallCancel(callID: callID, reason: reason)), from: h.carol)
            )
            #expect(forged.decision == .silence)
            #expect(forged.reason == .cancelNotFromCaller)
            #expect(forged.callID == callID)
        }
        #expect(h.eventKinds() == ["ringing"])
        #expect(await h.reporter.provider.liveCalls.count == 1)
        let state = try h.store.transaction { tx in try tx.callState(account: "bob", callID: callID) }
        #expect(state?.state == .ringing)
        #expect(state?.callerUserID == "alice")
        #expect(try h.store.transaction { tx in try tx.missedCalls(account: "bob") }.isEmpty)

        // alice's own cancel still ends it.
        let real = try await h.decide(h.body(.callCancel(CallCancel(callID: callID, reason: .answeredElsewhere))))
        #expect(real.reason == .callCancelled)
        #expect(h.eventKinds() == ["ringing", "ended"])
        #expect(await h.reporter.provider.liveCalls.isEmpty)
        #expect(await h.reporter.violations == 0)
    }

    @Test("a cancel from another contact that arrives BEFORE alice's invite does not stop the ring")
    func earlyCancelFromAnotherUserIsIgnored() async throws {
        let h = try EngineHarness()
        let callID = UUID()
        let forged = try await h.decide(
            h.body(.callCancel(CallCancel(callID: callID, reason: .remoteEnded)), from: h.carol)
        )
        #expect(forged.decision == .silence)
        #expect(forged.reason == .cancelForUnknownCall)
        let invite = try await h.decide(h.body(EngineHarness.invite(callID)))
        #expect(invite.decision == .ring)
        #expect(invite.reason == .freshInvite)
        #expect(h.eventKinds() == ["ringing"])
        #expect(try h.store.transaction { tx in try tx.missedCalls(account: "bob") }.isEmpty)
    }

    @Test("text → alert with the sender's display name, title and body")
    func textAlerts() async throws {
        let h = try EngineHarness()
        let d = try await h.decide(
            h.body(.text(TextMessage(threadID: "t-1", title: "Lunch?", body: "Are we still on?")))
        )
        #expect(d.decision == .alert)
        #expect(d.reason == .text)
        #expect(
            d.alert
                == FilterDecision.Alert(
                    title: "Alice Example",
                    subtitle: "Lunch?",
                    body: "Are we still on?",
                    threadID: "t-1"
                )
        )
    }

    @Test("receipt and unknown kinds → silence")
    func nonAlertKindsAreSilenced() async throws {
        let h = try EngineHarness()
        let receipt = try await h.decide(h.body(.receipt(Receipt(messageIDs: [.random()]))))
        #expect(receipt.decision == .silence)
        #expect(receipt.reason == .receipt)
        let unknown = try await h.decide(h.body(.unknown(kind: MessageKind(rawValue: 0x90), fields: [1])))
        #expect(unknown.decision == .silence)
        #expect(unknown.reason == .unknownKind)
        #expect(unknown.kind == "kind-0x90")
    }

    @Test("the same message id within the retention window → silence, reason replay")
    func replayIsSilenced() async throws {
        let h = try EngineHarness()
        let body = try h.body(.text(TextMessage(threadID: "", title: "", body: "hi")))
        #expect(try await h.decide(body).decision == .alert)
        let second = try await h.decide(body)
        #expect(second.decision == .silence)
        #expect(second.reason == .replay)
        // A replayed call invite does not ring again either.
        let invite = try h.body(EngineHarness.invite(UUID()))
        #expect(try await h.decide(invite).decision == .ring)
        #expect(try await h.decide(invite).reason == .replay)
        #expect(h.eventKinds() == ["ringing"])
    }

    @Test("send time too far in the future → fallback, reason clock; at the allowance it still passes")
    func futureIsRefused() async throws {
        let h = try EngineHarness()
        let text = MessageContent.text(TextMessage(threadID: "", title: "", body: "x"))
        let future = try await h.decide(h.body(text, sentAtMs: h.clock.nowMs + 30_001))
        #expect(future.decision == .fallback)
        #expect(future.reason == .clock)
        #expect(future.alert == FilterDecision.fallbackAlert)
        #expect(try await h.decide(h.body(text, sentAtMs: h.clock.nowMs + 30_000)).decision == .alert)
        let stale = try await h.decide(h.body(text, sentAtMs: h.clock.nowMs - 48 * 3_600_000 - 1))
        #expect(stale.reason == .stale)
    }

    @Test("unknown recipient key → fallback with its reason; an older key opens until its expires_at_ms only")
    func keyRotation() async throws {
        let h = try EngineHarness()
        let text = MessageContent.text(TextMessage(threadID: "", title: "", body: "x"))
        let stranger = try await h.decide(h.body(text, to: h.mallory.currentDeviceKey.privateKey.publicKey))
        #expect(stranger.decision == .fallback)
        #expect(stranger.reason == .opening(.unknownRecipientKey))
        let old = h.bob.deviceKeys[0]
        let expires = try #require(old.expiresAtMs)
        #expect(try await h.decide(h.body(text, to: old.privateKey.publicKey)).decision == .alert)
        h.clock.advance(ms: Int64(expires) - h.clock.nowMs - 1)
        #expect(try await h.decide(h.body(text, to: old.privateKey.publicKey)).decision == .alert)
        h.clock.advance(ms: 1)
        let expired = try await h.decide(h.body(text, to: old.privateKey.publicKey))
        #expect(expired.reason == .opening(.unknownRecipientKey))
        #expect(try await h.decide(h.body(text)).decision == .alert, "the current key still opens")
    }

    static let expiryCases: [(Int64, [Int64])] = [
        (0, [0]), (2 * 3_600_000, [0, 2 * 3_600_000 - 1, 2 * 3_600_000]),
    ]

    @Test(
        "the identity's per-key expiry decides: revoked (grace 0) stops at once, grace 2 h opens until then",
        arguments: Self.expiryCases
    )
    func keyExpiryFromIdentity(graceMs: Int64, probes: [Int64]) async throws {
        let users = try MultiDeviceUsers()
        var bob = users.bobPhone
        let old = bob.currentDeviceKey
        let clock = TestClock(ms: MultiDeviceUsers.start)
        bob.rotate(nowMs: UInt64(clock.nowMs), gracePeriodMs: UInt64(graceMs))
        let list = try users.bobList.updatingKeys(of: bob, nowMs: UInt64(clock.nowMs))
        let filter = try DeviceFilter(
            bob,
            ownList: list,
            contacts: [users.aliceList],
            statePath: try DeviceFilter.temporaryStatePath(),
            clock: clock
        )
        let start = clock.nowMs
        for offset in probes {
            clock.advance(ms: start + offset - clock.nowMs)
            let message = InnerMessage(
                messageID: .random(),
                sentAtMs: UInt64(clock.nowMs),
                senderUserID: "alice",
                senderSigningKeyID: users.alicePhone.signingKey.publicKey.keyID,
                content: .text(TextMessage(threadID: "", title: "", body: "to the old key"))
            )
            let body = try PushPayload.seal(
                message,
                to: old.privateKey.publicKey,
                signingKey: users.alicePhone.signingKey
            ).apnsBody
            let d = try await filter.decide(body)
            let opens = offset < graceMs
            #expect(
                d.reason == (opens ? .text : .opening(.unknownRecipientKey)),
                "grace \(graceMs) ms, at +\(offset) ms"
            )
            #expect(d.decision == (opens ? .alert : .fallback))
        }
    }

    @Test("bad signature, tampering, unknown version, bad JSON and base64, oversized → fallback with reason")
    func hostilePayloads() async throws {
        let h = try EngineHarness()
        let good = try h.body(.text(TextMessage(threadID: "", title: "", body: "x")))
        let envelope = try APNsAlertTransport.envelope(fromBody: good).serialized
        func body(_ e: [UInt8]) -> [UInt8] {
            Array(
                ("{\"aps\":{\"alert\":{\"title\":\"New message\"},\"mutable-content\":1},\"e2ee\":\""
                    + Data(e).base64EncodedString() + "\"}").utf8
            )
        }
        var flipped = envelope
        flipped[100] ^= 0x40
        var version = envelope
        version[0] = 9
        // Forged: Mallory signs but claims Alice's signing key id.
        let forgedMessage = InnerMessage(
            messageID: .random(),
            sentAtMs: UInt64(h.clock.nowMs),
            senderUserID: "alice",
            senderSigningKeyID: h.alice.signingKey.publicKey.keyID,
            content: .text(TextMessage(threadID: "", title: "", body: "pay me"))
        )
        let forged = try PushPayload.sealUnchecked(
            forgedMessage,
            to: h.bob.currentDeviceKey.privateKey.publicKey,
            recipientKeyID: h.bob.currentDeviceKey.keyID,
            signingKey: h.mallory.signingKey,
            padding: APNsAlertTransport.padding
        ).apnsBody
        let cases: [([UInt8], FilterReason)] = [
            (body(flipped), .opening(.openFailed)),
            (body(version), .opening(.unsupportedVersion)),
            (forged, .opening(.badSignature)),
            (Array("{\"aps\":".utf8), .opening(.malformedEnvelope)),
            (Array("{\"e2ee\":\"***\"}".utf8), .opening(.malformedEnvelope)),
            (good + Array(repeating: 0x20, count: 4097 - good.count), .opening(.tooLarge)),
        ]
        for (input, reason) in cases {
            let d = try await h.decide(input)
            #expect(d.decision == .fallback, "\(reason)")
            #expect(d.reason == reason)
            #expect(d.alert == FilterDecision.fallbackAlert)
        }
        let notJSON = try await h.decide(line: "this is not json")
        #expect(notJSON.reason == .opening(.malformedEnvelope))
        // The engine goes on: a good payload after all that is still decided.
        #expect(try await h.decide(h.body(.text(TextMessage(threadID: "", title: "", body: "ok")))).decision == .alert)
    }

    @Test(
        "a sender not in the contacts: fallback by default, silence by policy",
        arguments: [FilterPolicy.UnknownSenderPolicy.fallback, .silence]
    )
    func unknownSender(policy: FilterPolicy.UnknownSenderPolicy) async throws {
        var p = FilterPolicy()
        p.unknownSender = policy
        let h = try EngineHarness(policy: p)
        let d = try await h.decide(h.body(.text(TextMessage(threadID: "", title: "", body: "hi")), from: h.mallory))
        #expect(d.reason == .unknownSender)
        #expect(d.decision == (policy == .fallback ? FilterDecision.Action.fallback : FilterDecision.Action.silence))
    }

    @Test("message ids are per sender: two contacts using the same id are both decided; a repeat is a replay")
    func replayIsPerSender() async throws {
        let h = try EngineHarness()
        let shared = MessageID.random()
        let text = { (body: String) in MessageContent.text(TextMessage(threadID: "", title: "", body: body)) }
        let fromAlice = try await h.decide(h.body(text("from alice"), messageID: shared))
        let fromCarol = try await h.decide(h.body(text("from carol"), from: h.carol, messageID: shared))
        let aliceAgain = try await h.decide(h.body(text("alice again"), messageID: shared))
        let carolAgain = try await h.decide(h.body(text("carol again"), from: h.carol, messageID: shared))
        #expect(
            [fromAlice, fromCarol, aliceAgain, carolAgain].map(\.decision) == [.alert, .alert, .silence, .silence]
        )
        #expect([fromAlice, fromCarol, aliceAgain, carolAgain].map(\.reason) == [.text, .text, .replay, .replay])
        #expect(fromAlice.alert?.title == "Alice Example")
        #expect(fromCarol.alert?.title == "Carol Example")
        #expect(fromCarol.alert?.body == "from carol")
    }

    @Test("a ring that times out ends as unanswered and is logged as missed")
    func ringTimeout() async throws {
        let h = try EngineHarness()
        let callID = UUID()
        _ = try await h.decide(h.body(EngineHarness.invite(callID, timeout: 20)))
        h.clock.advance(ms: 49_000)
        try await h.engine.expireRinging()
        #expect(h.eventKinds() == ["ringing"])
        h.clock.advance(ms: 1_001)  // 20 s + 30 s skew allowance passed
        try await h.engine.expireRinging()
        #expect(h.eventKinds() == ["ringing", "missed"])
        #expect(h.events.events.last?.reason == .ended(.unanswered))
        let missed = try h.store.transaction { tx in try tx.missedCalls(account: "bob") }
        #expect(missed.map(\.reason) == [.ended(.unanswered)])
        // A late cancel for it changes nothing.
        let late = try await h.decide(h.body(.callCancel(CallCancel(callID: callID, reason: .remoteEnded))))
        #expect(late.reason == .cancelForEndedCall)
        #expect(await h.reporter.violations == 0)
    }

    @Test("several accounts: each payload maps to its account by key id; decisions and events name it")
    func severalAccounts() async throws {
        let carol = try Identity.generate(userID: "carol", displayName: "Carol", nowMs: 1)
        let alice = try Identity.generate(userID: "alice", displayName: "Alice", nowMs: 1)
        let h = try EngineHarness(extraAccounts: [
            FilterAccount(identity: carol, contacts: ContactBook([try alice.card()]))
        ]
        )
        let callID = UUID()
        let message = InnerMessage(
            messageID: .random(),
            sentAtMs: UInt64(h.clock.nowMs),
            senderUserID: "alice",
            senderSigningKeyID: alice.signingKey.publicKey.keyID,
            content: EngineHarness.invite(callID)
        )
        let body = try PushPayload.seal(
            message,
            to: carol.currentDeviceKey.privateKey.publicKey,
            signingKey: alice.signingKey
        ).apnsBody
        let d = try await h.decide(body)
        #expect(d.account == "carol")
        #expect(d.handoff?.account == "carol")
        #expect(h.events.events.map(\.account) == ["carol"])
        let bobs = try await h.decide(h.body(.text(TextMessage(threadID: "", title: "", body: "x"))))
        #expect(bobs.account == "bob")
    }

    @Test("locked keys: payloads are kept, one generic alert, all decided in order after unlock")
    func lockedKeys() async throws {
        let h = try EngineHarness(bobLocked: true)
        let bodies = try (0..<3).map { i in try h.body(.text(TextMessage(threadID: "", title: "", body: "m\(i)"))) }
        let first = try await h.engine.process([PayloadInput(seq: 1, apnsID: nil, body: bodies[0])])
        #expect(first.decisions.isEmpty)
        #expect(first.keptWhileLocked == 1)
        #expect(first.showLockedAlert)
        let more = try await h.engine.process([
            PayloadInput(seq: 2, apnsID: nil, body: bodies[1]), PayloadInput(seq: 3, apnsID: nil, body: bodies[2]),
        ])
        #expect(more.keptWhileLocked == 2)
        #expect(!more.showLockedAlert)
        let decided = try await h.engine.unlock(account: "bob", identity: h.bob)
        #expect(decided.map(\.seq) == [1, 2, 3])
        #expect(decided.map(\.alert?.body) == ["m0", "m1", "m2"])
        #expect(try h.store.transaction { tx in try tx.pendingCount() } == 0)
        #expect(await h.engine.isLocked == false)
    }

    @Test("a batch is one transaction: a seq decided before is not decided again")
    func exactlyOncePerSeq() async throws {
        let h = try EngineHarness()
        let body = try h.body(EngineHarness.invite(UUID()))
        let first = try await h.engine.process([PayloadInput(seq: 77, apnsID: nil, body: body)])
        #expect(first.decisions.count == 1)
        let again = try await h.engine.process([PayloadInput(seq: 77, apnsID: nil, body: body)])
        #expect(again.decisions.isEmpty)
        #expect(h.eventKinds() == ["ringing"])
    }
}
