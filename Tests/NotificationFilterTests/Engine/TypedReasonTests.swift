@_spi(Vectors) import E2EECore
import Foundation
import Logging
import Testing

@testable import NotificationFilter

/// Reasons are typed inside the filter: strings only at the edges (decision lines, the state's columns, event
/// lines), and a refused call's or an opening failure's reason carries its code as a value.
@Suite("Typed reason codes")
struct TypedReasonTests {
    /// Every reason code of README "Decisions and reason codes", with the constant that stands for it.
    static let documented: [(FilterReason, String)] = [
        (.freshInvite, "fresh-invite"),
        (.text, "text"),
        (.inviteExpired, "invite-expired"),
        (.cancelledBeforeInvite, "cancelled-before-invite"),
        (.callRefusedMaximumCallsReached, "call-refused-maximum-calls-reached"),
        (.callRefusedDoNotDisturb, "call-refused-filtered-by-do-not-disturb"),
        (.callRefusedBlockList, "call-refused-filtered-by-block-list"),
        (.callRefusedUnentitled, "call-refused-unentitled"),
        (.receipt, "receipt"),
        (.unknownKind, "unknown-kind"),
        (.replay, "replay"),
        (.duplicateCall, "duplicate-call"),
        (.callCancelled, "call-cancelled"),
        (.cancelForUnknownCall, "cancel-before-invite"),
        (.cancelForEndedCall, "cancel-for-ended-call"),
        (.cancelNotFromCaller, "cancel-not-from-caller"),
        (.answeredElsewhere, "answered-elsewhere"),
        (.declinedElsewhere, "declined-elsewhere"),
        (.cancelForAnsweredCall, "cancel-for-answered-call"),
        (.declinedByCallee, "declined-by-callee"),
        (.unknownSender, "unknown-sender"),
        (.clock, "clock"),
        (.stale, "stale"),
        (.malformedInput, "malformed-input"),
        (.opening(.tooLarge), "too-large"),
        (.opening(.malformedEnvelope), "malformed-envelope"),
        (.opening(.foreignPayload), "foreign-payload"),
        (.opening(.unsupportedVersion), "unsupported-version"),
        (.opening(.unsupportedSuite), "unsupported-suite"),
        (.opening(.unknownRecipientKey), "unknown-recipient-key"),
        (.opening(.openFailed), "open-failed"),
        (.opening(.malformedMessage), "malformed-message"),
        (.opening(.unknownSender), "unknown-sender"),
        (.opening(.badSignature), "bad-signature"),
    ]

    @Test("every documented reason encodes to exactly its string and decodes back, with its typed code")
    func documentedReasonsRoundTrip() throws {
        for (reason, string) in Self.documented {
            #expect(reason.rawValue == string)
            #expect("\(reason)" == string)
            let encoded = String(decoding: try JSONEncoder().encode([reason]), as: UTF8.self)
            #expect(encoded == "[\"\(string)\"]")
            let decoded = try JSONDecoder().decode([FilterReason].self, from: Data(encoded.utf8))
            #expect(decoded == [reason])
            let parsed = FilterReason(rawValue: string)
            #expect(parsed == reason)
            #expect(parsed.refusal == reason.refusal, "\(string)")
            #expect(parsed.openingError == reason.openingError, "\(string)")
            let decision = FilterDecision(seq: 7, apnsID: nil, decision: .silence, reason: reason)
            #expect(decision.jsonLine() == "{\"decision\":\"silence\",\"reason\":\"\(string)\",\"seq\":7}")
        }
        let refusals: [(FilterError.Code, FilterReason)] = [
            (.maximumCallsReached, .callRefusedMaximumCallsReached),
            (.filteredByDoNotDisturb, .callRefusedDoNotDisturb),
            (.filteredByBlockList, .callRefusedBlockList),
            (.unentitled, .callRefusedUnentitled),
        ]
        for (code, reason) in refusals {
            #expect(FilterReason.callRefused(code) == reason)
            #expect(FilterReason(rawValue: reason.rawValue).refusal == code)
        }
        #expect(FilterReason.callRefused(.callUUIDAlreadyExists) == nil)
        #expect(FilterReason.opening(.badSignature).openingError == .badSignature)
        #expect(FilterReason.unknownSender.openingError == .unknownSender)
        #expect(FilterReason.text.refusal == nil && FilterReason.text.openingError == nil)
        // A code the filter does not name yet keeps its string and its code.
        let newer = FilterError.Code(rawValue: "filteredBySomethingNew")
        #expect(FilterReason.callRefused(newer)?.rawValue == "call-refused-filteredBySomethingNew")
        #expect(FilterReason(rawValue: "call-refused-filteredBySomethingNew").refusal == newer)
        // An unknown string decodes, as itself.
        let unknown = try JSONDecoder().decode(FilterReason.self, from: Data("\"some-future-reason\"".utf8))
        #expect(unknown.rawValue == "some-future-reason" && unknown.refusal == nil && unknown.openingError == nil)
    }

    @Test("reason strings stored in the state read back as typed values; an unknown one reads back as itself")
    func storedStringsReadBackTyped() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("s.sqlite"))
        let (refused, ended, unknown, cancel) = (UUID(), UUID(), UUID(), UUID())
        try store.transaction { tx throws in
            // Rows as an older or another build wrote them: only strings.
            try tx.database.withStatement(
                """
                INSERT INTO missed_call (account, call_id, caller_handle, display_name, at_ms, reason) VALUES
                    ('a', ?1, NULL, NULL, 1, 'call-refused-filtered-by-block-list'),
                    ('a', ?2, NULL, NULL, 2, 'remoteEnded'),
                    ('a', ?3, NULL, NULL, 3, 'some-future-reason')
                """
            ) { s throws(FilterError) in
                try s.bind(refused.uuidString, at: 1)
                try s.bind(ended.uuidString, at: 2)
                try s.bind(unknown.uuidString, at: 3)
                try s.run()
            }
            try tx.database.withStatement(
                "INSERT INTO early_cancel (account, call_id, sender, reason, at_ms) VALUES ('a', ?1, 'x', 'gone', 4)"
            ) { s throws(FilterError) in
                try s.bind(cancel.uuidString, at: 1)
                try s.run()
            }
        }
        let (missed, cancels) = try store.transaction { tx throws in
            (try tx.missedCalls(account: "a"), try tx.consumeEarlyCancels(account: "a", callID: cancel))
        }
        #expect(
            missed.map(\.reason) == [
                .decision(.callRefusedBlockList), .ended(.remoteEnded),
                .decision(FilterReason(rawValue: "some-future-reason")),
            ]
        )
        #expect(missed.map(\.reason.refusal) == [.filteredByBlockList, nil, nil])
        #expect(missed.map(\.reason.cancelReason) == [nil, .remoteEnded, nil])
        #expect(
            missed.map(\.reason.rawValue) == [
                "call-refused-filtered-by-block-list", "remoteEnded", "some-future-reason",
            ]
        )
        #expect(cancels.map(\.reason) == [CallEndedReason(rawValue: "gone")])
        #expect(cancels.first?.reason.cancelReason == nil)
    }

    /// Forwards admissions to a real reporter and records the refusals it is given; everything else is dropped.
    struct RecordsRefusals: CallReporting {
        actor Log {
            var refusals: [FilterError.Code] = []
            func add(_ code: FilterError.Code) { self.refusals.append(code) }
        }
        let inner: CallKitReporter
        let log = Log()
        func admission() async -> CallAdmission { await self.inner.admission() }
        func reportRefused(_ handoff: FilterDecision.Handoff, refusal: FilterError.Code, atMs: Int64) async {
            await self.log.add(refusal)
        }
        func handOff(_ handoff: FilterDecision.Handoff) async {}
        func endCall(account: String, callID: UUID, cause: CallEndCause, atMs: Int64) async {}
        func restoreRinging(_ handoff: FilterDecision.Handoff) async {}
        func apply(_ action: CallUserAction, _ handoff: FilterDecision.Handoff) async {}
        func reportRemoteDeclined(account: String, callID: UUID, byUser: String, byDevice: String?, atMs: Int64) async {
        }
    }

    @Test("a refused call recorded in the state comes back after a restart as its typed refusal code")
    func refusalSurvivesRestartTyped() async throws {
        let h = try EngineHarness()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let quiet = CallProviderConfiguration(doNotDisturb: true)
        let callID = UUID()
        let newer = FilterError.Code(rawValue: "filteredBySomethingNew")
        let later = UUID()
        do {
            // The first process decides the refusal and dies before its `missed` event is recorded.
            let first = RecordsRefusals(
                inner: CallKitReporter(configuration: quiet, sink: h.events, clock: h.clock.wallClock, logger: logger)
            )
            let engine = try FilterEngine(
                store: h.store,
                accounts: await h.engine.accounts,
                reporter: RefusedCallTests.DiesBeforeRefusedEvent(inner: first.inner),
                clock: h.clock.wallClock,
                logger: logger
            )
            let outcome = try await engine.process([
                PayloadInput(seq: 1, apnsID: nil, body: try h.body(EngineHarness.invite(callID)))
            ])
            #expect(outcome.decisions.map(\.reason) == [.callRefusedDoNotDisturb])
            #expect(outcome.decisions.first?.reason.refusal == .filteredByDoNotDisturb)
            // A refusal with a code this build does not name, as a newer provider would give it.
            let reason = try #require(FilterReason.callRefused(newer))
            try h.store.transaction { tx throws in
                try tx.setCallState(
                    CallStateRecord(
                        account: "bob",
                        callID: later,
                        state: .missed,
                        updatedAtMs: EngineHarness.start + 1,
                        endReason: .decision(reason)
                    )
                )
                _ = try tx.recordMissedCall(
                    MissedCallRecord(
                        account: "bob",
                        callID: later,
                        callerHandle: "alice",
                        displayName: nil,
                        atMs: EngineHarness.start + 1,
                        reason: .decision(reason)
                    )
                )
            }
        }
        let restarted = RecordsRefusals(
            inner: CallKitReporter(configuration: quiet, sink: h.events, clock: h.clock.wallClock, logger: logger)
        )
        _ = try await h.restartedEngine(reporter: restarted, logger: logger)
        #expect(await restarted.log.refusals == [.filteredByDoNotDisturb, newer])
    }
}
