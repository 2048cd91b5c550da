import E2EECore
import Foundation
import Locking
import Logging
import PushTransport
import TestSupport
import Testing

@testable import NotificationFilter

/// No key, plaintext or envelope ever reaches a log: neither the library's `Logger` at `.trace` nor the
/// `e2ee-filter run --verbose` stderr.
///
/// Message ids are not secret; these tests print how many of them show up in logs (the engine logs seq, decision
/// and reason only, so none are expected) but do not fail on them. Call ids do appear (metadata `callID`): they
/// are random UUIDs chosen per call, carried inside the encrypted payload, and needed to follow a call in the log.
@Suite("No secret in logs", .serialized)
struct NoSecretsInLogsTests {
    /// Every kind of payload, with marker strings where plaintext would be.
    struct Corpus {
        var lines: [String] = []
        var bodies: [[UInt8]] = []
        var messageIDs: [String] = []
        var probe = SecretProbe()

        init(_ fixture: FilterFixture) throws {
            let m = UUID().uuidString.prefix(8)
            let textMarker = "TEXTBODYMARKER\(m)"
            let titleMarker = "TITLEMARKER\(m)"
            let nameMarker = "CALLERNAMEMARKER\(m)"
            let handleMarker = "CALLERHANDLEMARKER\(m)"
            let strangerMarker = "STRANGERTEXTMARKER\(m)"
            for (name, value) in [
                ("text body", textMarker), ("text title", titleMarker), ("caller name", nameMarker),
                ("caller handle", handleMarker), ("stranger's text", strangerMarker),
            ] {
                self.probe.add(name, value)
            }
            self.probe.add(identity: fixture.bob)
            self.probe.add(identity: fixture.alice)
            self.probe.add(identity: fixture.mallory)

            let t0 = fixture.startMs
            let a = UUID()
            let b = UUID()
            let c = UUID()
            let d = UUID()
            var messageIDs: [String] = []
            func sealed(_ content: MessageContent, from: Identity? = nil, sentAtMs: Int64? = nil) throws -> [UInt8] {
                let id = MessageID.random()
                messageIDs.append(id.hex)
                return try fixture.body(content, from: from, sentAtMs: sentAtMs, messageID: id)
            }
            let text = try sealed(FilterFixture.text(textMarker, title: titleMarker))
            var flipped = try APNsAlertTransport.envelope(fromBody: try sealed(FilterFixture.text(textMarker)))
                .serialized
            flipped[100] ^= 0x40
            let flippedBody = Array(
                ("{\"aps\":{\"alert\":{\"title\":\"New message\"},\"mutable-content\":1},\"e2ee\":\""
                    + Data(flipped).base64EncodedString() + "\"}").utf8
            )
            let toStranger = try PushPayload.seal(
                InnerMessage(
                    messageID: .random(),
                    sentAtMs: UInt64(t0),
                    senderUserID: "alice",
                    senderSigningKeyID: fixture.alice.signingKey.publicKey.keyID,
                    content: FilterFixture.text(textMarker)
                ),
                to: fixture.mallory.currentDeviceKey.privateKey.publicKey,
                signingKey: fixture.alice.signingKey
            ).apnsBody
            self.bodies = [
                text,
                try sealed(FilterFixture.invite(a, name: nameMarker, handle: handleMarker)),
                try sealed(FilterFixture.invite(a, name: nameMarker, handle: handleMarker)),  // duplicate
                try sealed(FilterFixture.cancel(a, .remoteEnded)),
                try sealed(FilterFixture.invite(b, timeout: 60, name: nameMarker, handle: handleMarker)),  // times out
                try sealed(  // too late to ring
                    FilterFixture.invite(c, timeout: 60, name: nameMarker, handle: handleMarker),
                    sentAtMs: t0 - 7_200_000
                ),
                try sealed(FilterFixture.cancel(d, .answeredElsewhere)),  // before its invite
                try sealed(FilterFixture.invite(d, name: nameMarker, handle: handleMarker)),
                try sealed(.receipt(Receipt(messageIDs: [.random()]))),
                text,  // replay
                try sealed(FilterFixture.text(strangerMarker), from: fixture.mallory),  // unknown sender
                flippedBody,  // open-failed
                toStranger,  // unknown recipient key
                try sealed(FilterFixture.text(textMarker), sentAtMs: t0 + 3_600_000),  // clock
                try sealed(.unknown(kind: MessageKind(rawValue: 0x90), fields: Array(textMarker.utf8))),
            ]
            self.messageIDs = messageIDs
            for body in self.bodies { try self.probe.add(envelopeOf: body) }
            for (index, body) in self.bodies.enumerated() {
                self.lines.append(SpoolRecord(seq: Int64(index + 1), body: body, receivedAtMs: t0).jsonLine())
            }
            let n = Int64(self.bodies.count)
            self.lines.append("{\"body\":\"not json \(textMarker)\",\"seq\":\(n + 1)}")
            self.lines.append("{\"body\":42,\"seq\":\(n + 2),\"x\":\"\(textMarker)\"}")
        }
    }

    private static func check(_ logs: [String], _ probe: SecretProbe, messageIDs: [String], what: String) {
        for line in logs {
            let leaks = probe.leaks(in: line)
            #expect(leaks.isEmpty, "\(what) leaks \(leaks.joined(separator: ", ")): \(line.prefix(300))")
        }
        let ids = messageIDs.filter { id in logs.contains { $0.lowercased().contains(id) } }
        print("\(what): \(logs.count) log lines, \(ids.count) of \(messageIDs.count) message ids appear")
    }

    @Test("in-process filter (engine, state, CallKit reporter, outbox, daemon) logs at .trace without secrets")
    func inProcessLogs() async throws {
        let fixture = try FilterFixture()
        let corpus = try Corpus(fixture)
        let spoolPath = fixture.path("spool.jsonl")
        try appendToFile(spoolPath, Array(corpus.lines.map { $0 + "\n" }.joined().utf8))
        let records = LogCapture(label: "fp-test")
        let clock = TestClock(ms: fixture.startMs)
        var options = fixture.spoolRunOptions(spoolPath)
        options.eventsPath = fixture.path("events.jsonl")
        options.clock = clock.wallClock
        let parts = try FilterApp.build(options, logger: records.logger)
        try await parts.daemon.run()
        clock.advance(ms: 3_600_000)
        try await parts.engine.expireRinging()  // call b rang unanswered: the missed path logs too
        // A restart on the same state: recovery and re-emission paths log as well.
        let again = try FilterApp.build(options, logger: records.logger)
        try await again.daemon.run()

        // The plaintext did reach the output (so its absence from the logs means something).
        let decisions = JSONLines.read(fixture.path("decisions.jsonl")).lines
        #expect(decisions.count == corpus.lines.count)
        #expect(decisions.contains { $0.contains("TEXTBODYMARKER") })
        let events = JSONLines.read(fixture.path("events.jsonl")).lines
        #expect(events.contains { $0.contains("\"missed\"") })

        let logs = records.lines
        #expect(logs.count >= corpus.lines.count, "every decision is logged at debug")
        #expect(logs.contains { $0.contains("decided") })
        #expect(logs.contains { $0.contains("call ringing") })
        Self.check(logs, corpus.probe, messageIDs: corpus.messageIDs, what: "in-process logger")
    }

    @Test("e2ee-filter run --verbose: stderr carries no secret")
    func verboseStderr() async throws {
        let fixture = try FilterFixture()
        let corpus = try Corpus(fixture)
        let input = fixture.path("input.jsonl")
        try appendToFile(input, Array(corpus.lines.map { $0 + "\n" }.joined().utf8))
        let run = try await FilterProcess.run(
            ["run", "--verbose"] + fixture.accountArguments(state: fixture.path("state.sqlite")),
            stdin: input,
            directory: fixture.directory,
            name: "verbose"
        )
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let decisions = JSONLines.split(run.stdout).lines
        #expect(decisions.count == corpus.lines.count)
        #expect(decisions.contains { $0.contains("TEXTBODYMARKER") })
        let logs = run.stderr.split(separator: "\n").map(String.init)
        #expect(logs.count >= corpus.lines.count, "--verbose logs every decision")
        #expect(logs.contains { $0.contains("decided") })
        Self.check(logs, corpus.probe, messageIDs: corpus.messageIDs, what: "--verbose stderr")
    }
}
