import E2EECore
import Foundation
import Logging
import RelayClient
import Sender
import Testing

@testable import Relay

/// `e2ee-send --relay` and `batch --relay` as the Sender library runs them (``RelaySender``), in process against a
/// relay served on loopback: what the process tests (RelaySendCLITests) see through `e2ee-send`, without spawning.
@Suite("RelaySender: sending through a relay, in process")
struct RelaySenderTests {
    /// bob enrolled at a running relay with `token`; alice's sender, with bob's token in her contacts folder.
    static func withSender(
        policy: RelayService.Policy = RelayService.Policy(),
        _ body: (ServiceFixture, TestUser, inout RelaySender) async throws -> Void
    ) async throws {
        try await ServiceFixture.with(policy: policy) { fixture in
            let relay = try await RelayEndToEndTests.RunningRelay.start(fixture: fixture, clients: [:])
            try await withCleanup(relay, { await $0.stopRecordingErrors() }) { relay in
                try await withClient("https://127.0.0.1:\(relay.port)", ca: relay.caPath) { client in
                    let alice = try TestUser.make("alice", devices: ["laptop"])
                    let bob = try TestUser.make("bob")
                    let token = DeliveryToken()
                    try await fixture.enroll(bob, token: token)
                    let contacts = fixture.folder.file("contacts")
                    try FileManager.default.createDirectory(atPath: contacts, withIntermediateDirectories: true)
                    try SecretFile.write(
                        path: contacts + "/bob.delivery-token",
                        bytes: SecureBytes(copying: Array((token.hex + "\n").utf8))
                    )
                    var sender = RelaySender(
                        client: client,
                        builder: PushBuilder(identity: alice.devices[0], clock: .fixed(fixture.clock.nowMs)),
                        trust: try ContactTrust(directory: ContactDirectory(folder: contacts), pinsPath: nil),
                        contacts: contacts,
                        tokenFile: nil,
                        ownTokenFile: nil
                    )
                    try await body(fixture, bob, &sender)
                }
            }
        }
    }

    @Test("a message: the list fetched and pinned, one envelope per device in one submit, one result line each")
    func oneMessage() async throws {
        try await Self.withSender { fixture, bob, sender in
            let messageID = MessageID.random()
            let lines = try await sender.send(
                .text(TextMessage(threadID: "t", title: "", body: "hi")),
                to: "bob",
                messageID: messageID,
                sentAtMs: nil,
                line: 1
            )
            #expect(lines.map(\.device) == ["phone", "tablet"])
            #expect(lines.map(\.ok) == [true, true])
            #expect(lines.map(\.relayStatus) == [202, 202])
            #expect(lines.map(\.messageID) == [messageID.hex, messageID.hex])
            #expect(Set(lines.compactMap(\.relayPushID)).count == 2)
            #expect(try await fixture.pushCount() == 2)
            #expect(sender.trust.pins.pins["bob"]?.listVersion == bob.list.listVersion)
        }
    }

    @Test("batch: a bad line fails alone, in order; a missing token refuses its recipient; the summary counts all")
    func batch() async throws {
        try await Self.withSender { fixture, _, sender in
            var written: [String] = []
            var notices: [String] = []
            let summary = await sender.run(
                lines: [
                    #"{"kind":"text","to":"bob","body":"one"}"#,
                    "",
                    "not a request",
                    #"{"kind":"text","to":"bob","body":"two","device_token":"ab"}"#,
                    #"{"kind":"receipt","to":"bob","message_ids":["00112233445566778899aabbccddeeff"]}"#,
                ],
                output: { written.append($0) },
                notice: { notices.append($0) }
            )
            #expect(summary.lines == 4)
            #expect(summary.results == 6)
            #expect(summary.failures == 2)
            #expect(summary.firstFailureLine == 2)
            #expect(summary.firstFailure?.code == .badRequest)
            #expect(summary.outputError == nil)
            let objects = written.map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(objects.map { $0?["line"] as? Int } == [1, 1, 2, 3, 4, 4])
            #expect(objects.map { $0?["ok"] as? Bool } == [true, true, false, false, true, true])
            #expect(objects[3]?["error"] as? String == "usage")
            #expect(try await fixture.pushCount() == 4)
            #expect(notices.isEmpty)

            // No token file for carol's user: her line is refused before anything is sent, and the run goes on.
            let carol = try TestUser.make("carol", devices: ["phone"])
            try await fixture.enroll(carol, token: DeliveryToken())
            written = []
            let refused = await sender.run(
                lines: [#"{"kind":"text","to":"carol","body":"x"}"#, #"{"kind":"text","to":"bob","body":"y"}"#],
                output: { written.append($0) },
                notice: { _ in }
            )
            #expect(refused.firstFailure?.code == .missingKey)
            #expect(refused.firstFailure?.message.contains("carol.delivery-token") == true)
            #expect(refused.failures == 1)
            #expect(written.count == 3)
            #expect(try await fixture.pushCount() == 6)
        }
    }

    @Test("an output failure stops writing, not sending: the rest are counted as unwritten")
    func outputFailure() async throws {
        try await Self.withSender { (fixture, _, sender) async throws -> Void in
            var writes = 0
            let summary = await sender.run(
                lines: [#"{"kind":"text","to":"bob","body":"a"}"#, #"{"kind":"text","to":"bob","body":"b"}"#],
                output: { _ throws(SenderError) in
                    writes += 1
                    throw SenderError(.outputFailed, "cannot write to standard output (the reader closed the pipe)")
                },
                notice: { _ in }
            )
            #expect(writes == 1)
            #expect(summary.outputError?.code == .outputFailed)
            #expect(summary.unwritten == 4)
            #expect(try await fixture.pushCount() == 4)
        }
    }

    /// What a run did, in order: each line read from the input, each result line written.
    final class EventLog: @unchecked Sendable {
        var events: [String] = []
    }

    static func texts(_ count: Int, log: EventLog) -> some Sequence<String> {
        (1...count).lazy.map { number in
            log.events.append("read \(number)")
            return #"{"kind":"text","to":"bob","body":"n\#(number)"}"#
        }
    }

    @Test("batch with a window: later lines are read while earlier submits are in flight; results stay in input order")
    func window() async throws {
        try await Self.withSender { (fixture, _, sender) async throws -> Void in
            let log = EventLog()
            var lines: [Int] = []
            let summary = await sender.run(
                lines: Self.texts(12, log: log),
                window: 4,
                output: { line throws(SenderError) in
                    let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                    let number = object?["line"] as? Int ?? 0
                    if lines.last != number { log.events.append("wrote \(number)") }
                    lines.append(number)
                },
                notice: { _ in }
            )
            #expect(summary.lines == 12)
            #expect(summary.results == 24)
            #expect(summary.failures == 0)
            #expect(lines == (1...12).flatMap { [$0, $0] })
            // Four submits in flight before the first result is written.
            #expect(Array(log.events.prefix(4)) == ["read 1", "read 2", "read 3", "read 4"])
            #expect(log.events.filter { $0.hasPrefix("wrote") } == (1...12).map { "wrote \($0)" })
            #expect(try await fixture.pushCount() == 24)

            // A window of 1: each line's results are written before the next line is read.
            let strict = EventLog()
            _ = await sender.run(
                lines: Self.texts(3, log: strict),
                window: 1,
                output: { line throws(SenderError) in
                    let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                    let number = object?["line"] as? Int ?? 0
                    if strict.events.last != "wrote \(number)" { strict.events.append("wrote \(number)") }
                },
                notice: { _ in }
            )
            #expect(strict.events == ["read 1", "wrote 1", "read 2", "wrote 2", "read 3", "wrote 3"])
        }
    }

    @Test("batch: a rate-limited submit waits out Retry-After within the budget, and fails at once without one")
    func retryAfter() async throws {
        var policy = RelayService.Policy()
        policy.recipientRatePerMinute = 60
        policy.recipientBurst = 16  // eight submits to bob's two devices
        try await Self.withSender(policy: policy) { fixture, _, sender in
            var written: [String] = []
            let log = EventLog()
            let noBudget = await sender.run(
                lines: Self.texts(9, log: log),
                output: { written.append($0) },
                notice: { _ in }
            )
            #expect(noBudget.failures == 2)
            #expect(noBudget.firstFailureLine == 9)
            #expect(noBudget.firstFailure?.code == .relayUnavailable)
            #expect(noBudget.firstFailure?.message.contains("rate-limited") == true)
            #expect(noBudget.firstFailure?.message.contains("send again in 2 s") == true)
            #expect(try await fixture.pushCount() == 16)

            // The relay's clock moves on while the sender waits: the same submit is then accepted.
            let advance = Task {
                try await Task.sleep(for: .milliseconds(300))
                fixture.clock.advance(ms: 2_000)
            }
            written = []
            let waited = await sender.run(
                lines: [#"{"kind":"text","to":"bob","body":"c"}"#],
                retryAfterBudget: .seconds(10),
                output: { written.append($0) },
                notice: { _ in }
            )
            try await advance.value
            #expect(waited.failures == 0)
            #expect(waited.results == 2)
            #expect(try await fixture.pushCount() == 18)
        }
    }
}
