@_spi(Vectors) import E2EECore
import Foundation
import Logging
import Testing

@testable import NotificationFilter

/// An invite the call provider refuses never rings, so it is decided as a missed call with the refusal as its
/// reason, gets a `missed` event, and its state is final (a later cancel or retry is handled as for an ended call).
@Suite("Refused handoffs are missed calls, not rings")
struct RefusedCallTests {
    @Test("provider at its maximum: the invite is missed-call with call-refused-maximum-calls-reached")
    func maximumCallsReachedIsMissed() async throws {
        let h = try EngineHarness(provider: CallProviderConfiguration(maximumCallGroups: 1))
        let first = UUID()
        let second = UUID()
        #expect(try await h.decide(h.body(EngineHarness.invite(first))).decision == .ring)
        let d = try await h.decide(h.body(EngineHarness.invite(second)))
        #expect(d.decision == .missedCall)
        #expect(d.reason == .callRefusedMaximumCallsReached)
        #expect(d.callID == second)
        #expect(d.handoff == nil)
        #expect(d.alert?.title == "Missed call")
        #expect(d.alert?.body == "Alice Example called you")
        #expect(h.eventKinds() == ["ringing", "missed"])
        #expect(h.events.events.last?.callID == second.uuidString)
        #expect(h.events.events.last?.reason == .refused(.maximumCallsReached))
        #expect(await h.reporter.violations == 0)
        #expect(await h.reporter.reporter.counters.handoffs == 1)
        #expect(await h.reporter.provider.liveCalls.map(\.uuid) == [first])

        let (state, missed) = try h.store.transaction { tx in
            (try tx.callState(account: "bob", callID: second), try tx.missedCalls(account: "bob"))
        }
        #expect(state?.state == .missed)
        #expect(state?.endReason == .decision(.callRefusedMaximumCallsReached))
        #expect(state?.endReason?.refusal == .maximumCallsReached)
        #expect(missed.map(\.callID) == [second])
        #expect(missed.map(\.reason) == [.decision(.callRefusedMaximumCallsReached)])

        // The refused call is over: its cancel and a retry of its invite are handled as for an ended call.
        let cancel = try await h.decide(h.body(.callCancel(CallCancel(callID: second, reason: .remoteEnded))))
        #expect(cancel.decision == .silence)
        #expect(cancel.reason == .cancelForEndedCall)
        let retry = try await h.decide(h.body(EngineHarness.invite(second)))
        #expect(retry.decision == .silence)
        #expect(retry.reason == .duplicateCall)
        #expect(h.eventKinds() == ["ringing", "missed"])
        #expect(await h.reporter.violations == 0)
    }

    @Test("do-not-disturb and a blocked caller: one reason code per refusal, each with a missed event")
    func doNotDisturbAndBlockList() async throws {
        let h = try EngineHarness()
        await h.reporter.provider.updateConfiguration(CallProviderConfiguration(doNotDisturb: true))
        let quiet = try await h.decide(h.body(EngineHarness.invite(UUID())))
        #expect(quiet.decision == .missedCall)
        #expect(quiet.reason == .callRefusedDoNotDisturb)
        await h.reporter.provider.updateConfiguration(
            CallProviderConfiguration(blockedHandles: [CallHandle(type: .generic, value: "alice")])
        )
        let blocked = try await h.decide(h.body(EngineHarness.invite(UUID())))
        #expect(blocked.decision == .missedCall)
        #expect(blocked.reason == .callRefusedBlockList)
        #expect(h.eventKinds() == ["missed", "missed"])
        #expect(h.events.events.map(\.reason) == [.refused(.filteredByDoNotDisturb), .refused(.filteredByBlockList)])
        #expect(await h.reporter.reporter.counters.handoffs == 0)
        #expect(try h.store.transaction { tx in try tx.missedCalls(account: "bob") }.count == 2)
    }

    @Test("a mixed batch: ring decisions == ringing events, missed-call decisions == missed events")
    func mixedBatchRingsMatchEvents() async throws {
        let h = try EngineHarness(provider: CallProviderConfiguration(maximumCallGroups: 2))
        let c = (0..<5).map { _ in UUID() }
        let contents: [MessageContent] = [
            EngineHarness.invite(c[0]),  // ring (1 live)
            EngineHarness.invite(c[1]),  // ring (2 live)
            EngineHarness.invite(c[2]),  // refused: maximum
            .text(TextMessage(threadID: "", title: "t", body: "hello")),
            .callCancel(CallCancel(callID: c[0], reason: .answeredElsewhere)),  // ends c0 (1 live)
            EngineHarness.invite(c[3]),  // ring (2 live)
            EngineHarness.invite(c[1]),  // duplicate
            EngineHarness.invite(c[4]),  // refused: maximum
            .callCancel(CallCancel(callID: c[2], reason: .remoteEnded)),  // the refused call is over
            EngineHarness.invite(c[2]),  // duplicate
        ]
        let inputs = try contents.enumerated().map { i, content in
            PayloadInput(seq: Int64(100 + i), apnsID: nil, body: try h.body(content))
        }
        let outcome = try await h.engine.process(inputs)
        #expect(
            outcome.decisions.map(\.reason) == [
                .freshInvite, .freshInvite, .callRefusedMaximumCallsReached, .text, .callCancelled,
                .freshInvite, .duplicateCall, .callRefusedMaximumCallsReached, .cancelForEndedCall,
                .duplicateCall,
            ]
        )
        let rings = outcome.decisions.filter { $0.decision == .ring }
        let missed = outcome.decisions.filter { $0.decision == .missedCall }
        #expect(rings.count == 3)
        #expect(missed.count == 2)
        #expect(h.eventKinds() == ["ringing", "ringing", "missed", "ended", "ringing", "missed"])
        #expect(h.eventKinds().filter { $0 == "ringing" }.count == rings.count)
        #expect(h.eventKinds().filter { $0 == "missed" }.count == missed.count)
        #expect(h.events.events.filter { $0.event == .ringing }.map(\.callID) == [c[0], c[1], c[3]].map(\.uuidString))
        #expect(h.events.events.filter { $0.event == .missed }.map(\.callID) == [c[2], c[4]].map(\.uuidString))
        #expect(
            await h.reporter.provider.liveCalls.map(\.uuid).sorted { $0.uuidString < $1.uuidString }
                == [c[1], c[3]].sorted { $0.uuidString < $1.uuidString }
        )
        #expect(await h.reporter.violations == 0)
    }

    /// Forwards to a real reporter, except `reportRefused`: the process "dies" before the missed event is recorded.
    struct DiesBeforeRefusedEvent: CallReporting {
        let inner: CallKitReporter
        func admission() async -> CallAdmission { await self.inner.admission() }
        func reportRefused(_ handoff: FilterDecision.Handoff, refusal: FilterError.Code, atMs: Int64) async {}
        func handOff(_ handoff: FilterDecision.Handoff) async { await self.inner.handOff(handoff) }
        func endCall(account: String, callID: UUID, cause: CallEndCause, atMs: Int64) async {}
        func restoreRinging(_ handoff: FilterDecision.Handoff) async { await self.inner.restoreRinging(handoff) }
        func apply(_ action: CallUserAction, _ handoff: FilterDecision.Handoff) async {
            await self.inner.apply(action, handoff)
        }
        func reportRemoteDeclined(account: String, callID: UUID, byUser: String, byDevice: String?, atMs: Int64) async {
            await self.inner.reportRemoteDeclined(
                account: account,
                callID: callID,
                byUser: byUser,
                byDevice: byDevice,
                atMs: atMs
            )
        }
    }

    @Test("a refused call's missed event lost in a crash is recorded once by the restart")
    func refusedEventSurvivesCrash() async throws {
        let h = try EngineHarness()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let outbox = try EventOutbox(store: h.store, eventsPath: nil, forward: nil, logger: logger)
        let quiet = CallProviderConfiguration(doNotDisturb: true)
        let callID = UUID()
        do {
            let real = CallKitReporter(configuration: quiet, sink: outbox, clock: h.clock.wallClock, logger: logger)
            let engine = try FilterEngine(
                store: h.store,
                accounts: await h.engine.accounts,
                reporter: DiesBeforeRefusedEvent(inner: real),
                clock: h.clock.wallClock,
                logger: logger
            )
            let outcome = try await engine.process([
                PayloadInput(seq: 1, apnsID: nil, body: try h.body(EngineHarness.invite(callID)))
            ])
            #expect(outcome.decisions.map(\.reason) == [.callRefusedDoNotDisturb])
        }
        #expect(try h.store.transaction { tx in try tx.eventLines(after: 0) }.isEmpty)
        for _ in 0..<2 {  // a restart, then another: the event is recorded once
            let reporter = CallKitReporter(configuration: quiet, sink: outbox, clock: h.clock.wallClock, logger: logger)
            _ = try await h.restartedEngine(reporter: reporter, logger: logger)
        }
        let lines = try h.store.transaction { tx in try tx.eventLines(after: 0) }
        #expect(lines.count == 1)
        let event = try JSONDecoder().decode(CallEvent.self, from: Data(lines[0].utf8))
        #expect(event.event == .missed)
        #expect(event.callID == callID.uuidString)
        #expect(event.reason == .refused(.filteredByDoNotDisturb))
    }
}
