import E2EECore
import Foundation
import Logging
import Testing

@testable import NotificationFilter

/// A call that rang and ended in the batch a kill interrupted is restored after the restart from the engine's
/// durable state alone: who called and whether with video come from the state, never from the event outbox.
@Suite("Restart recovery takes the caller of a call whose end event was lost from the state")
struct RecoveryFromStateTests {
    /// The process "dies" right after the batch's commit: no handoff or end is reported (the outbox stays empty).
    struct DiesAfterCommit: CallReporting {
        let inner: CallKitReporter
        func admission() async -> CallAdmission { await self.inner.admission() }
        func reportRefused(_ handoff: FilterDecision.Handoff, refusal: FilterError.Code, atMs: Int64) async {}
        func handOff(_ handoff: FilterDecision.Handoff) async {}
        func endCall(account: String, callID: UUID, cause: CallEndCause, atMs: Int64) async {}
        func restoreRinging(_ handoff: FilterDecision.Handoff) async {}
        func apply(_ action: CallUserAction, _ handoff: FilterDecision.Handoff) async {}
        func reportRemoteDeclined(account: String, callID: UUID, byUser: String, byDevice: String?, atMs: Int64) async {
        }
    }

    /// Records what a restart restores and ends, and forwards it to a real reporter.
    struct RecordsRestores: CallReporting {
        actor Log {
            var restored: [FilterDecision.Handoff] = []
            var ended: [(callID: UUID, cause: CallEndCause)] = []
            func restore(_ handoff: FilterDecision.Handoff) { self.restored.append(handoff) }
            func end(_ callID: UUID, _ cause: CallEndCause) { self.ended.append((callID, cause)) }
        }
        let inner: CallKitReporter
        let log = Log()
        func admission() async -> CallAdmission { await self.inner.admission() }
        func reportRefused(_ handoff: FilterDecision.Handoff, refusal: FilterError.Code, atMs: Int64) async {
            await self.inner.reportRefused(handoff, refusal: refusal, atMs: atMs)
        }
        func handOff(_ handoff: FilterDecision.Handoff) async { await self.inner.handOff(handoff) }
        func endCall(account: String, callID: UUID, cause: CallEndCause, atMs: Int64) async {
            await self.log.end(callID, cause)
            await self.inner.endCall(account: account, callID: callID, cause: cause, atMs: atMs)
        }
        func restoreRinging(_ handoff: FilterDecision.Handoff) async {
            await self.log.restore(handoff)
            await self.inner.restoreRinging(handoff)
        }
        func apply(_ action: CallUserAction, _ handoff: FilterDecision.Handoff) async {
            await self.inner.apply(action, handoff)
        }
        func reportRemoteDeclined(account: String, callID: UUID, byUser: String, byDevice: String?, atMs: Int64) async {
        }
    }

    /// What is in the event outbox for the call when the process restarts.
    enum Outbox: String, CaseIterable, CustomTestStringConvertible {
        /// Nothing: the process died before any of the call's events was recorded.
        case empty
        /// A `ringing` line that names someone else (the line is not where the caller is read from).
        case otherRingingLine
        var testDescription: String { self.rawValue }
    }

    @Test(
        "regression: a video call rung and ended before a kill is restored with its handle, name and video",
        .bug(id: "issue-8", "recovery decoded the caller from the outbox's ringing line; video was always false"),
        arguments: Outbox.allCases
    )
    func restoredFromState(outbox: Outbox) async throws {
        let h = try EngineHarness()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let callID = UUID()
        let invite = MessageContent.callInvite(
            CallInvite(
                callID: callID,
                callerHandle: "+15550100",
                displayName: "Alice Example",
                hasVideo: true,
                ringTimeoutSeconds: 3_600
            )
        )
        do {
            // One batch rings the call and ends it (the caller hung up); the process dies before either event.
            let engine = try FilterEngine(
                store: h.store,
                accounts: await h.engine.accounts,
                reporter: DiesAfterCommit(inner: h.reporter),
                clock: h.clock.wallClock,
                logger: logger
            )
            let outcome = try await engine.process([
                PayloadInput(seq: 1, apnsID: nil, body: try h.body(invite)),
                PayloadInput(seq: 2, apnsID: nil, body: try h.body(FilterFixture.cancel(callID, .remoteEnded))),
            ])
            #expect(outcome.decisions.map(\.reason) == [.freshInvite, .callCancelled])
        }
        if outbox == .otherRingingLine {
            let line = CallEvent(
                event: .ringing,
                callID: callID,
                account: "bob",
                handle: "mallory",
                displayName: "Mallory",
                atMs: h.clock.nowMs
            )
            .jsonLine()
            try h.store.transaction { tx throws in
                _ = try tx.appendEvent(event: "ringing", account: "bob", callID: callID.uuidString, line: line)
            }
        }

        let restarted = RecordsRestores(
            inner: CallKitReporter(configuration: .init(), sink: h.events, clock: h.clock.wallClock, logger: logger)
        )
        _ = try await h.restartedEngine(reporter: restarted, logger: logger)

        // Before: the caller came from the ringing line when there was one ("mallory"), and video was false.
        let restored = await restarted.log.restored
        #expect(restored.map(\.callID) == [callID])
        let handoff = try #require(restored.first)
        #expect(handoff.callerHandle == "+15550100")
        #expect(handoff.displayName == "Alice Example")
        #expect(handoff.hasVideo)
        #expect(handoff.account == "bob")
        let ended = await restarted.log.ended
        #expect(ended.map(\.callID) == [callID])
        #expect(ended.map(\.cause) == [.cancelled(.remoteEnded)])
    }
}
