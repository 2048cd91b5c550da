import E2EECore
import Foundation
import Locking
import Logging
import TestSupport
import Testing

@testable import NotificationFilter

/// The daemon's two stages: a batch is opened (``FilterEngine/open(_:)``) while the one before it is decided, and
/// the call events of a batch are committed together (``EventOutbox/beginBatch()``).
@Suite("Opening ahead and batched call events")
struct OpenAheadTests {
    @Test("a batch opened while the account is locked is opened again after the unlock, and decided")
    func openedWhileLocked() async throws {
        let h = try EngineHarness(bobLocked: true)
        let bodies = try (0..<2).map { i in try h.body(.text(TextMessage(threadID: "", title: "", body: "m\(i)"))) }
        let batch = await h.engine.open(
            bodies.enumerated().map { PayloadInput(seq: Int64($0 + 1), apnsID: nil, body: $1) }
        )
        #expect(try await h.engine.unlock(account: "bob", identity: h.bob).isEmpty, "nothing was kept")
        let outcome = try await h.engine.process(batch)
        #expect(outcome.keptWhileLocked == 0)
        #expect(outcome.decisions.map(\.decision) == [.alert, .alert])
        #expect(outcome.decisions.map(\.reason) == [.text, .text])
        #expect(outcome.decisions.map(\.seq) == [1, 2])
    }

    @Test("a batch opened ahead is decided as of the moment it was opened")
    func decidedAsOfOpening() async throws {
        let h = try EngineHarness()
        let callID = UUID()
        let batch = await h.engine.open([
            PayloadInput(seq: 1, apnsID: nil, body: try h.body(EngineHarness.invite(callID, timeout: 30)))
        ])
        // Decided later than the invite's ring window: the batch's own clock reading still holds.
        h.clock.advance(ms: 60_000)
        let outcome = try await h.engine.process(batch)
        #expect(outcome.decisions.map(\.reason) == [.freshInvite])
        #expect(h.events.events.map(\.event) == [.ringing])
        // Opened now, the same invite is past its window.
        let late = try await h.decide(
            try h.body(EngineHarness.invite(UUID(), timeout: 30), sentAtMs: h.clock.nowMs - 60_000)
        )
        #expect(late.reason == .inviteExpired)
    }

    @Test("events held in a batch are committed together at its end, in order; duplicates are dropped")
    func heldEvents() async throws {
        let h = try EngineHarness()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let path = h.directory + "/events.jsonl"
        let forwarded = InMemoryCallEventSink()
        let outbox = try EventOutbox(store: h.store, eventsPath: path, forward: forwarded, logger: logger)
        let calls = [UUID(), UUID()]
        func event(_ kind: CallEvent.Kind, _ call: UUID, at ms: Int64) -> CallEvent {
            CallEvent(event: kind, callID: call, account: "bob", atMs: ms)
        }
        func written() -> [String] {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        func stored() throws -> Int { try h.store.transaction { tx in try tx.eventLines(after: 0).count } }

        outbox.beginBatch()
        outbox.emit(event(.ringing, calls[0], at: 1))
        outbox.beginBatch()  // nested: the outer end commits
        outbox.emit(event(.ringing, calls[1], at: 2))
        outbox.emit(event(.ringing, calls[0], at: 3))  // a second ringing of one call: dropped at commit
        outbox.endBatch()
        #expect(written().isEmpty, "held until the outermost batch ends")
        #expect(try stored() == 0)
        #expect(forwarded.events.isEmpty)
        outbox.emit(event(.missed, calls[1], at: 4))
        outbox.endBatch()

        let expected = [
            event(.ringing, calls[0], at: 1), event(.ringing, calls[1], at: 2), event(.missed, calls[1], at: 4),
        ]
        #expect(written() == expected.map { $0.jsonLine() })
        #expect(try stored() == 3)
        #expect(forwarded.events.map { $0.jsonLine() } == expected.map { $0.jsonLine() })

        // Outside a batch, each event is committed as it comes.
        outbox.emit(event(.missed, calls[0], at: 5))
        #expect(written().count == 4)
        #expect(try stored() == 4)
    }

    @Test("the engine commits a batch's call events after its last report")
    func engineBatchesEvents() async throws {
        let h = try EngineHarness()
        let counting = CountingSink()
        let engine = try await h.engine(sink: counting)
        let inputs = try (0..<3).map { i in
            PayloadInput(seq: Int64(i + 1), apnsID: nil, body: try h.body(EngineHarness.invite(UUID())))
        }
        let outcome = try await engine.process(inputs)
        // The provider takes two calls at a time (CallKit's default here): the third is a missed call.
        #expect(outcome.decisions.map(\.reason) == [.freshInvite, .freshInvite, .callRefusedMaximumCallsReached])
        #expect(counting.log == ["begin", "ringing", "ringing", "missed", "end"])
    }
}

extension OpenAheadTests {
    /// Runs the daemon over `spool` to its end with its own state and events files; returns the decision lines
    /// and the event lines.
    private func daemonRun(
        _ h: EngineHarness,
        spool: String,
        tag: String,
        batchSize: Int,
        batchesAhead: Int
    ) async throws -> (decisions: [String], events: [String]) {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let store = try FilterStateStore(path: h.directory + "/\(tag).sqlite", logger: logger)
        let (decisions, events) = (h.directory + "/\(tag).decisions", h.directory + "/\(tag).events")
        let outbox = try EventOutbox(store: store, eventsPath: events, forward: nil, logger: logger)
        let engine = try await h.engine(store: store, sink: outbox)
        var configuration = FilterDaemonConfiguration(input: .spool(path: spool), decisionsPath: decisions)
        configuration.exitAtEndOfInput = true
        configuration.batchSize = batchSize
        configuration.batchesAhead = batchesAhead
        try await FilterDaemon(configuration: configuration, engine: engine, events: outbox, logger: logger).run()
        func lines(_ path: String) -> [String] {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        return (lines(decisions), lines(events))
    }

    @Test("batches read and opened ahead are decided in input order, exactly as one payload at a time")
    func daemonOrder() async throws {
        let h = try EngineHarness()
        let spool = h.directory + "/spool.jsonl"
        var lines: [String] = []
        var calls: [UUID] = []
        for i in 0..<150 {
            let content: MessageContent
            switch i % 5 {
            case 0: content = .text(TextMessage(threadID: "t", title: "", body: "m\(i)"))
            case 1, 2:
                calls.append(UUID())
                content = EngineHarness.invite(calls.last!)
            case 3: content = .callCancel(CallCancel(callID: calls[calls.count / 2], reason: .remoteEnded))
            default: content = .callCancel(CallCancel(callID: UUID(), reason: .remoteEnded))
            }
            let body = try h.body(content)
            lines.append(SpoolRecord(seq: Int64(lines.count + 1), body: body, receivedAtMs: h.clock.nowMs).jsonLine())
            if i == 75 {  // a line longer than any push line (64 KB): a bare body, too large
                lines.append(String(repeating: "x", count: 300_000))
            }
            if i % 17 == 0 {  // a replay of the same push, and a line that is no push at all
                lines.append(
                    SpoolRecord(seq: Int64(lines.count + 1), body: body, receivedAtMs: h.clock.nowMs).jsonLine()
                )
                lines.append(
                    SpoolRecord(seq: Int64(lines.count + 1), body: [0x7B], receivedAtMs: h.clock.nowMs).jsonLine()
                )
            }
        }
        try appendToFile(spool, Array(lines.map { $0 + "\n" }.joined().utf8))

        let single = try await self.daemonRun(h, spool: spool, tag: "single", batchSize: 1, batchesAhead: 1)
        let ahead = try await self.daemonRun(h, spool: spool, tag: "ahead", batchSize: 7, batchesAhead: 3)
        #expect(single.decisions.count == lines.count)
        let seqs = single.decisions.map { line in (JSONLines.object(line)?["seq"] as? NSNumber)?.intValue ?? 0 }
        #expect(seqs == Array(1...lines.count), "one decision per line, in order")
        #expect(ahead.decisions == single.decisions)
        #expect(ahead.events == single.events)
        let reasons = Set(single.decisions.compactMap { JSONLines.object($0)?["reason"] as? String })
        #expect(
            reasons.isSuperset(of: [
                "text", "fresh-invite", "call-refused-maximum-calls-reached", "call-cancelled", "replay",
                "malformed-envelope", "too-large",
            ]),
            "the input mixes every path: \(reasons.sorted())"
        )
        // 60 invites: each one rings or is refused (the provider takes two calls at a time, so a missed event
        // with maximumCallsReached); the cancels end five of the calls that rang (a missed event each).
        let ringingOrRefused = single.events.filter { $0.contains("\"ringing\"") || $0.contains("maximumCallsReached") }
        #expect(ringingOrRefused.count == 60)
        #expect(single.events.count == 65)
    }
}

/// Records the order of events and batch boundaries.
private final class CountingSink: CallEventSink, Sendable {
    private let entries = PThreadMutex<[String]>([])
    var log: [String] { self.entries.withLock { $0 } }
    func emit(_ event: CallEvent) { self.entries.withLock { $0.append(event.event.rawValue) } }
    func beginBatch() { self.entries.withLock { $0.append("begin") } }
    func endBatch() { self.entries.withLock { $0.append("end") } }
}
