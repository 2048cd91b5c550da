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
        _ body: (ServiceFixture, TestUser, inout RelaySender) async throws -> Void
    ) async throws {
        try await ServiceFixture.with { fixture in
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
                        builder: PushBuilder(identity: alice.devices[0], clock: .fixed(fixture.clock.ms)),
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
}
