import E2EECore
import Foundation
import Sender
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bob's phone and tablet, each an `e2ee-filter run` on its own state, share one gateway spool (`--device-token`).
@Suite("e2ee-filter: two devices on one spool, answer on one", .serialized)
struct MultiDeviceProcessTests {
    static let phoneToken = String(repeating: "a1", count: 32)
    static let tabletToken = String(repeating: "b2", count: 32)

    /// Waits until `path` has at least `count` lines, or fails naming the daemon's stderr.
    static func waitForLines(_ path: String, _ count: Int, _ daemons: [FilterProcess]) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(120)
        while JSONLines.count(path) < count {
            for daemon in daemons where !daemon.process.isRunning {
                throw ProcessTestError("e2ee-filter exited early: \(daemon.standardError)")
            }
            guard clock.now < deadline else {
                throw ProcessTestError("\(path) has \(JSONLines.count(path)) of \(count) lines after 120 s")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test("invite rings on both; `answer` on the phone prints the batch line; its cancel stops the tablet")
    func answerOnPhoneStopsTablet() async throws {
        let fixture = try FilterFixture()
        let now = UInt64(fixture.startMs)
        let phone = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: now - 1000)
        let tablet = try Identity.generate(
            userID: "bob",
            displayName: "Bob",
            deviceID: "tablet",
            withUserKey: false,
            nowMs: now - 1000
        )
        let push = { (token: String) in PushAddress(APNsAddress(topic: "com.example.app", deviceToken: token)) }
        let bobList = try DeviceList.create(for: phone, push: push(Self.phoneToken), nowMs: now - 900)
            .signingIn(
                try DeviceRequest.make(for: tablet, push: push(Self.tabletToken), nowMs: now - 900),
                signer: phone,
                nowMs: now - 900
            )
        try phone.save(path: fixture.path("phone.identity"))
        try tablet.save(path: fixture.path("tablet.identity"))
        // The own list lives in the contacts folder (as an app keeps it): the default for --card.
        try SecretFile.writePublic(path: fixture.contactsPath + "/bob.card.json", bytes: bobList.jsonData())

        let spoolPath = fixture.path("spool.jsonl")
        var seq: Int64 = 0
        func spool(_ content: MessageContent, from sender: Identity, to device: Identity, token: String) throws {
            seq += 1
            let message = InnerMessage(
                messageID: .random(),
                sentAtMs: now,
                senderUserID: sender.userID,
                senderSigningKeyID: sender.signingKey.publicKey.keyID,
                content: content
            )
            let body = try PushPayload.seal(
                message,
                to: device.currentDeviceKey.privateKey.publicKey,
                signingKey: sender.signingKey
            ).apnsBody
            var record = SpoolRecord(seq: seq, body: body, receivedAtMs: fixture.startMs)
            record.deviceToken = token
            try appendToFile(spoolPath, Array((record.jsonLine() + "\n").utf8))
        }
        try appendToFile(spoolPath, [])

        func arguments(_ name: String, token: String) -> [String] {
            [
                "run", "--identity", fixture.path("\(name).identity"), "--contacts", fixture.contactsPath,
                "--state", fixture.path("\(name).sqlite"), "--spool", spoolPath, "--device-token", token,
                "--output", fixture.path("\(name).decisions"), "--events", fixture.path("\(name).events"),
            ]
        }
        let phoneRun = try FilterProcess(
            arguments: arguments("phone", token: Self.phoneToken),
            directory: fixture.directory,
            name: "phone-run"
        )
        let tabletRun = try FilterProcess(
            arguments: arguments("tablet", token: Self.tabletToken.uppercased()),  // any case
            directory: fixture.directory,
            name: "tablet-run"
        )
        let daemons = [phoneRun, tabletRun]
        defer { for daemon in daemons { daemon.signal(SIGKILL) } }

        // alice calls bob: one push per device, both in the one spool.
        let callID = UUID()
        try spool(FilterFixture.invite(callID), from: fixture.alice, to: phone, token: Self.phoneToken)
        try spool(FilterFixture.invite(callID), from: fixture.alice, to: tablet, token: Self.tabletToken)
        try await Self.waitForLines(fixture.path("phone.decisions"), 1, daemons)
        try await Self.waitForLines(fixture.path("tablet.decisions"), 1, daemons)
        try await Self.waitForLines(fixture.path("phone.events"), 1, daemons)
        try await Self.waitForLines(fixture.path("tablet.events"), 1, daemons)

        // bob answers on the phone, while both daemons run.
        let answer = try await FilterProcess.run(
            [
                "answer", "--identity", fixture.path("phone.identity"), "--contacts", fixture.contactsPath,
                "--state", fixture.path("phone.sqlite"), "--call-id", callID.uuidString,
            ],
            directory: fixture.directory,
            name: "answer"
        )
        #expect(answer.status == 0, "stderr: \(answer.stderr)")
        let lines = JSONLines.split(answer.stdout).lines
        #expect(
            lines == [
                "{\"call_id\":\"\(callID.uuidString)\",\"kind\":\"cancel\",\"reason\":\"answeredElsewhere\",\"to\":\"bob\"}"
            ]
        )
        // It is a request `e2ee-send batch` takes as it is.
        let request = try SendRequest.parse(line: lines.first ?? "")
        #expect(
            try request.content(sender: phone) == .callCancel(CallCancel(callID: callID, reason: .answeredElsewhere))
        )
        // The running phone daemon applies it: `answered`.
        try await Self.waitForLines(fixture.path("phone.events"), 2, daemons)

        // The sealed answeredElsewhere reaches every device of bob, the phone included (docs/PROTOCOL.md §11.7):
        // the tablet stops, the phone silences its own echo.
        try spool(
            FilterFixture.cancel(callID, .answeredElsewhere),
            from: phone,
            to: tablet,
            token: Self.tabletToken
        )
        try spool(FilterFixture.cancel(callID, .answeredElsewhere), from: phone, to: phone, token: Self.phoneToken)
        try await Self.waitForLines(fixture.path("tablet.decisions"), 2, daemons)
        try await Self.waitForLines(fixture.path("phone.decisions"), 2, daemons)
        try await Self.waitForLines(fixture.path("tablet.events"), 2, daemons)
        // A second answer on the phone is refused: no longer ringing.
        let again = try await FilterProcess.run(
            [
                "answer", "--identity", fixture.path("phone.identity"), "--contacts", fixture.contactsPath,
                "--state", fixture.path("phone.sqlite"), "--call-id", callID.uuidString,
            ],
            directory: fixture.directory,
            name: "answer-again"
        )
        #expect(again.status == 69, "stderr: \(again.stderr)")
        #expect(again.stderr.contains("not ringing"))
        #expect(again.stdout.isEmpty)
        let unknown = try await FilterProcess.run(
            [
                "decline", "--identity", fixture.path("tablet.identity"), "--contacts", fixture.contactsPath,
                "--state", fixture.path("tablet.sqlite"), "--call-id", UUID().uuidString,
            ],
            directory: fixture.directory,
            name: "decline-unknown"
        )
        #expect(unknown.status == 65, "stderr: \(unknown.stderr)")

        for daemon in daemons { daemon.signal(SIGTERM) }
        for daemon in daemons { #expect(try await daemon.wait(timeout: .seconds(60)) == 0) }

        let phoneDecisions = JSONLines.read(fixture.path("phone.decisions")).lines.compactMap(JSONLines.object)
        let tabletDecisions = JSONLines.read(fixture.path("tablet.decisions")).lines.compactMap(JSONLines.object)
        // Each device decided only its own pushes.
        #expect(phoneDecisions.map { ($0["seq"] as? NSNumber)?.intValue } == [1, 4])
        #expect(phoneDecisions.map { $0["reason"] as? String } == ["fresh-invite", "own-echo"])
        #expect(tabletDecisions.map { ($0["seq"] as? NSNumber)?.intValue } == [2, 3])
        #expect(tabletDecisions.map { $0["reason"] as? String } == ["fresh-invite", "answered-elsewhere"])
        #expect(tabletDecisions.map { $0["decision"] as? String } == ["ring", "silence"])
        #expect(tabletDecisions.last?["sender_device"] as? String == "phone")
        #expect(phoneDecisions.first?["sender_device"] as? String == "primary", "alice's one device")
        let phoneEvents = JSONLines.read(fixture.path("phone.events")).lines.compactMap(JSONLines.object)
        let tabletEvents = JSONLines.read(fixture.path("tablet.events")).lines.compactMap(JSONLines.object)
        #expect(phoneEvents.map { $0["event"] as? String } == ["ringing", "answered"])
        #expect(tabletEvents.map { $0["event"] as? String } == ["ringing", "ended"])
        #expect(tabletEvents.last?["reason"] as? String == "answeredElsewhere")
        #expect(!tabletEvents.contains { $0["event"] as? String == "missed" }, "no missed call on the tablet")
    }
}
