import NotificationFilter
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("CallReporter: every handoff is reported")
struct CallReporterTests {
    @Test("a fresh handoff is reported and rings")
    func fresh() async throws {
        let h = CallHarness()
        let outcome = await h.reporter.reportNewIncomingVoIPPushPayload(
            IncomingCallPayload(callID: UUID(), update: callUpdate())
        )
        #expect(outcome == HandoffOutcome(reported: true, ringing: true, refusal: nil, endedAtOnce: nil))
        #expect(await h.reporter.counters == HandoffCounters(handoffs: 1, reports: 1, violations: 0))
    }

    @Test("two concurrent handoffs with the same call id: exactly one ringing, both reported, no violation")
    func duplicateRace() async throws {
        for _ in 0..<50 {
            let h = CallHarness()
            let payload = IncomingCallPayload(callID: UUID(), update: callUpdate())
            async let first = h.reporter.reportNewIncomingVoIPPushPayload(payload)
            async let second = h.reporter.reportNewIncomingVoIPPushPayload(payload)
            let outcomes = await [first, second]
            #expect(outcomes.filter(\.ringing).count == 1)
            #expect(outcomes.compactMap(\.refusal) == [.callUUIDAlreadyExists])
            #expect(outcomes.filter(\.reported).count == 2)
            #expect(h.sink.events.filter { $0.event == .ringing }.count == 1)
            #expect(await h.reporter.counters == HandoffCounters(handoffs: 2, reports: 2, violations: 0))
        }
    }

    @Test(
        "a stale handoff is reported, then ended at once with its reason",
        arguments: [
            (CallEndedReason.unanswered, CallEvent.Kind.missed),
            (.remoteEnded, .missed),
            (.answeredElsewhere, .ended),
            (.failed, .ended),
        ]
    )
    func stale(reason: CallEndedReason, expected: CallEvent.Kind) async throws {
        let h = CallHarness()
        let id = UUID()
        let outcome = await h.reporter.reportNewIncomingVoIPPushPayload(
            IncomingCallPayload(callID: id, update: callUpdate(), staleReason: reason)
        )
        #expect(outcome == HandoffOutcome(reported: true, ringing: false, refusal: nil, endedAtOnce: reason))
        #expect(h.sink.events.map(\.event) == [.ringing, expected])
        #expect(h.sink.events.last?.reason == .ended(reason))
        #expect(await h.provider.liveCalls.isEmpty)
        #expect(await h.reporter.counters.violations == 0)
    }

    @Test("a stale duplicate of a ringing call is reported, refused, and does not end the ringing call")
    func staleDuplicateRace() async throws {
        let h = CallHarness()
        let id = UUID()
        async let fresh = h.reporter.reportNewIncomingVoIPPushPayload(
            IncomingCallPayload(callID: id, update: callUpdate())
        )
        async let stale = h.reporter.reportNewIncomingVoIPPushPayload(
            IncomingCallPayload(callID: id, update: callUpdate(), staleReason: .unanswered)
        )
        let outcomes = await [fresh, stale]
        #expect(outcomes.filter(\.reported).count == 2)
        #expect(await h.reporter.counters == HandoffCounters(handoffs: 2, reports: 2, violations: 0))
        // Whichever came first decides: either the fresh one rings (stale refused) or the stale one
        // rang and ended at once (fresh refused). Never two ringing events, never a ringing call left
        // by a stale handoff.
        #expect(h.sink.events.filter { $0.event == .ringing }.count == 1)
        #expect(outcomes.compactMap(\.refusal) == [.callUUIDAlreadyExists])
    }

    @Test("refused handoffs (do-not-disturb, block list, too many calls) still count as reported")
    func refusedCountAsReported() async throws {
        let h = CallHarness(
            CallProviderConfiguration(maximumCallGroups: 1, blockedHandles: [CallHandle(type: .generic, value: "spam")])
        )
        let outcomes = [
            await h.reporter.reportNewIncomingVoIPPushPayload(
                IncomingCallPayload(callID: UUID(), update: callUpdate())
            ),
            await h.reporter.reportNewIncomingVoIPPushPayload(
                IncomingCallPayload(callID: UUID(), update: callUpdate("spam"))
            ),
            await h.reporter.reportNewIncomingVoIPPushPayload(
                IncomingCallPayload(callID: UUID(), update: callUpdate("carol"))
            ),
        ]
        await h.provider.updateConfiguration(CallProviderConfiguration(doNotDisturb: true))
        let dnd = await h.reporter.reportNewIncomingVoIPPushPayload(
            IncomingCallPayload(callID: UUID(), update: callUpdate("dan"))
        )
        #expect(outcomes.map(\.refusal) == [nil, .filteredByBlockList, .maximumCallsReached])
        #expect(dnd.refusal == .filteredByDoNotDisturb)
        #expect(await h.reporter.counters == HandoffCounters(handoffs: 4, reports: 4, violations: 0))
    }
}
