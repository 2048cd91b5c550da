import NotificationFilter
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("CallProvider: CallKit-like reports, failures, actions and ring timeout")
struct CallProviderTests {
    @Test("a reported call rings and emits one ringing event")
    func ringing() async throws {
        let h = CallHarness()
        let id = UUID()
        try await h.provider.reportNewIncomingCall(uuid: id, update: callUpdate(), ringTimeoutSeconds: 30)
        let call = try #require(await h.provider.call(id))
        #expect(call.state == .ringing)
        #expect(call.ringDeadline == h.clock.now.addingTimeInterval(30))
        #expect(h.sink.events.map(\.event) == [.ringing])
    }

    @Test("the same call id again is callUUIDAlreadyExists, also after the call ended")
    func duplicate() async throws {
        let h = CallHarness()
        let id = UUID()
        try await h.provider.reportNewIncomingCall(uuid: id, update: callUpdate())
        await #expect(throws: FilterError(code: .callUUIDAlreadyExists, message: "")) {
            try await h.provider.reportNewIncomingCall(uuid: id, update: callUpdate())
        }
        #expect(await h.provider.reportCall(uuid: id, reason: .remoteEnded))
        await #expect(throws: FilterError(code: .callUUIDAlreadyExists, message: "")) {
            try await h.provider.reportNewIncomingCall(uuid: id, update: callUpdate())
        }
        #expect(h.sink.events.map(\.event) == [.ringing, .missed])
    }

    @Test("do-not-disturb refuses with filteredByDoNotDisturb and emits nothing")
    func doNotDisturb() async throws {
        let h = CallHarness(CallProviderConfiguration(doNotDisturb: true))
        let error = await #expect(throws: FilterError.self) {
            try await h.provider.reportNewIncomingCall(uuid: UUID(), update: callUpdate())
        }
        #expect(error?.code == .filteredByDoNotDisturb)
        #expect(h.sink.events.isEmpty)
        #expect(await h.provider.liveCalls.isEmpty)
    }

    @Test("a blocked handle is filteredByBlockList; the same value with another type is not")
    func blockList() async throws {
        let h = CallHarness(CallProviderConfiguration(blockedHandles: [CallHandle(type: .phoneNumber, value: "+1555")]))
        let error = await #expect(throws: FilterError.self) {
            try await h.provider.reportNewIncomingCall(uuid: UUID(), update: callUpdate("+1555", type: .phoneNumber))
        }
        #expect(error?.code == .filteredByBlockList)
        try await h.provider.reportNewIncomingCall(uuid: UUID(), update: callUpdate("+1555", type: .generic))
        #expect(h.sink.events.map(\.event) == [.ringing])
    }

    @Test("a third live call with the default two call groups is maximumCallsReached")
    func maximumCalls() async throws {
        let h = CallHarness()
        let first = UUID()
        try await h.provider.reportNewIncomingCall(uuid: first, update: callUpdate())
        try await h.provider.reportNewIncomingCall(uuid: UUID(), update: callUpdate("carol"))
        let error = await #expect(throws: FilterError.self) {
            try await h.provider.reportNewIncomingCall(uuid: UUID(), update: callUpdate("dave"))
        }
        #expect(error?.code == .maximumCallsReached)
        // Ending one frees a group.
        try await h.provider.end(first)
        try await h.provider.reportNewIncomingCall(uuid: UUID(), update: callUpdate("dave"))
        #expect(await h.provider.liveCalls.count == 2)
    }

    @Test("an unsupported handle type is unentitled; video on an audio-only provider rings as audio")
    func unentitledAndVideo() async throws {
        let h = CallHarness(CallProviderConfiguration(supportsVideo: false, supportedHandleTypes: [.generic]))
        let error = await #expect(throws: FilterError.self) {
            try await h.provider.reportNewIncomingCall(uuid: UUID(), update: callUpdate("a@b.c", type: .emailAddress))
        }
        #expect(error?.code == .unentitled)
        let id = UUID()
        try await h.provider.reportNewIncomingCall(uuid: id, update: callUpdate(video: true))
        #expect(await h.provider.call(id)?.update.hasVideo == false)
    }

    @Test(
        "reportCall ends a ringing call with each reason: missed for unanswered/remoteEnded, ended otherwise",
        arguments: [
            (CallEndedReason.failed, CallEvent.Kind.ended),
            (.remoteEnded, .missed),
            (.unanswered, .missed),
            (.answeredElsewhere, .ended),
            (.declinedElsewhere, .ended),
        ]
    )
    func endReasonsWhileRinging(reason: CallEndedReason, expected: CallEvent.Kind) async throws {
        let h = CallHarness()
        let id = UUID()
        try await h.provider.reportNewIncomingCall(uuid: id, update: callUpdate())
        let endedAt = Date(timeIntervalSince1970: 1_700_000_005.25)
        #expect(await h.provider.reportCall(uuid: id, endedAt: endedAt, reason: reason))
        let last = try #require(h.sink.events.last)
        #expect(last.event == expected)
        #expect(last.reason == .ended(reason))
        #expect(last.atMs == 1_700_000_005_250)
        #expect(await h.provider.call(id) == nil)
        #expect(await h.provider.reportCall(uuid: id, reason: reason) == false)  // already ended: ignored
        #expect(h.sink.events.count == 2)
    }

    @Test("an answered call ended by the remote side is ended, not missed")
    func endAnswered() async throws {
        let h = CallHarness()
        let id = UUID()
        try await h.provider.reportNewIncomingCall(uuid: id, update: callUpdate())
        try await h.provider.answer(id)
        await h.provider.reportCall(uuid: id, reason: .remoteEnded)
        #expect(h.sink.events.map(\.event) == [.ringing, .answered, .ended])
        #expect(h.sink.events.last?.reason == .ended(.remoteEnded))
    }

    @Test("user actions: answer, decline, end, and their errors")
    func userActions() async throws {
        let h = CallHarness()
        let answered = UUID()
        let declined = UUID()
        try await h.provider.reportNewIncomingCall(uuid: answered, update: callUpdate())
        try await h.provider.reportNewIncomingCall(uuid: declined, update: callUpdate("carol"))
        try await h.provider.answer(answered)
        #expect(await h.provider.call(answered)?.state == .active)
        #expect(await h.provider.call(answered)?.ringDeadline == nil)
        await #expect(throws: FilterError(code: .invalidAction, message: "")) {
            try await h.provider.answer(answered)
        }
        await #expect(throws: FilterError(code: .invalidAction, message: "")) {
            try await h.provider.decline(answered)
        }
        try await h.provider.decline(declined)
        try await h.provider.end(answered)
        await #expect(throws: FilterError(code: .unknownCallUUID, message: "")) {
            try await h.provider.end(answered)
        }
        await #expect(throws: FilterError(code: .unknownCallUUID, message: "")) {
            try await h.provider.answer(UUID())
        }
        let summary = h.sink.events.map { "\($0.event)/\($0.reason?.rawValue ?? "-")/\($0.handle ?? "-")" }
        #expect(
            summary == [
                "ringing/-/bob", "ringing/-/carol", "answered/-/bob", "declined/declined/carol", "ended/localEnded/bob",
            ]
        )
        #expect(await h.provider.liveCalls.isEmpty)
    }

    @Test("a ring that times out ends as unanswered and emits missed; an answered call never times out")
    func ringTimeout() async throws {
        let h = CallHarness(CallProviderConfiguration(defaultRingTimeoutSeconds: 45))
        let short = UUID()
        let long = UUID()
        try await h.provider.reportNewIncomingCall(uuid: short, update: callUpdate(), ringTimeoutSeconds: 10)
        try await h.provider.reportNewIncomingCall(uuid: long, update: callUpdate("carol"))
        #expect(await h.provider.nextRingDeadline == h.clock.now.addingTimeInterval(10))
        h.clock.advance(seconds: 9.999)
        #expect(await h.provider.expireRinging(now: h.clock.now).isEmpty)
        h.clock.advance(seconds: 0.001)
        #expect(await h.provider.expireRinging(now: h.clock.now) == [short])
        let missed = try #require(h.sink.events.last)
        #expect(missed.event == .missed)
        #expect(missed.reason == .ended(.unanswered))
        #expect(missed.atMs == h.clock.nowMs)
        try await h.provider.answer(long)
        h.clock.advance(seconds: 3600)
        #expect(await h.provider.expireRinging(now: h.clock.now).isEmpty)
        #expect(h.sink.events.map(\.event) == [.ringing, .ringing, .missed, .answered])
    }

    @Test("a restored ringing call emits no second ringing and still times out")
    func restore() async throws {
        let h = CallHarness()
        let id = UUID()
        #expect(
            await h.provider.restoreRingingCall(
                uuid: id,
                update: callUpdate(),
                ringDeadline: h.clock.now.addingTimeInterval(5)
            )
        )
        #expect(await h.provider.restoreRingingCall(uuid: id, update: callUpdate(), ringDeadline: h.clock.now) == false)
        #expect(h.sink.events.isEmpty)
        h.clock.advance(seconds: 5)
        #expect(await h.provider.expireRinging(now: h.clock.now) == [id])
        #expect(h.sink.events.map(\.event) == [.missed])
    }
}

@Suite("CallAdmission: the provider's rules as a copy a batch updates")
struct CallAdmissionTests {
    @Test("a copy of the provider's calls: admits up to the maximum, counts ends, refuses ended and live ids")
    func copyThenBatch() async throws {
        let h = CallHarness(CallProviderConfiguration(maximumCallGroups: 3))
        let ringing = UUID()
        let ended = UUID()
        try await h.provider.reportNewIncomingCall(uuid: ringing, update: callUpdate())
        try await h.provider.reportNewIncomingCall(uuid: ended, update: callUpdate())
        _ = await h.provider.reportCall(uuid: ended, endedAt: nil, reason: .remoteEnded)

        var admission = await h.provider.admission
        #expect(admission.liveIDs == [ringing])
        #expect(admission.endedIDs == [ended])
        #expect(admission.refusal(uuid: ringing, update: callUpdate())?.code == .callUUIDAlreadyExists)
        #expect(admission.refusal(uuid: ended, update: callUpdate())?.code == .callUUIDAlreadyExists)

        let first = UUID()
        let second = UUID()
        let third = UUID()
        #expect(admission.admit(uuid: first, update: callUpdate()) == nil)
        #expect(admission.admit(uuid: second, update: callUpdate()) == nil)
        #expect(admission.admit(uuid: third, update: callUpdate())?.code == .maximumCallsReached)
        admission.end(uuid: ringing)
        admission.end(uuid: ringing)  // once: a second end changes nothing
        #expect(admission.admit(uuid: first, update: callUpdate())?.code == .callUUIDAlreadyExists)
        #expect(admission.admit(uuid: third, update: callUpdate()) == nil)
        admission.end(uuid: third)
        #expect(admission.liveIDs == [first, second])
        #expect(admission.endedIDs == [ended, ringing, third])
        #expect(admission.refusal(uuid: third, update: callUpdate())?.code == .callUUIDAlreadyExists)
        // The provider's own calls are untouched by the copy.
        #expect(await h.provider.admission.liveIDs == [ringing])
    }
}
