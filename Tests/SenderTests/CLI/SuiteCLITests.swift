import E2EECore
import Foundation
import PushTransport
import Testing

/// `--suite` on keygen and rotate (docs/PROTOCOL.md §16.4): one user with a classical phone and an X-Wing tablet,
/// as processes.
@Suite("e2ee-send command line: crypto suites")
struct SuiteCLITests {
    typealias Devices = DeviceCLITests

    @Test("rotate --suite xwing moves the tablet; a text to bob is sealed per device in its list's suite")
    func bothSuitesForOneUser() async throws {
        let dir = try await Devices.setUp()
        let rotated = try await Devices.ok([
            "rotate", "--identity", dir + "/tablet/bob.identity", "--card", dir + "/bob/bob.card.json",
            "--suite", "xwing",
        ])
        #expect(rotated.stderr.contains("(suite classical -> xwing)"), "\(rotated.stderr)")
        let request = try DeviceRequest.parse(Array(rotated.stdout.utf8))
        #expect(request.formatVersion == 3)
        #expect(request.deviceKeys.map(\.publicKey.suite) == [.classical, .xwing])
        let added = try await Devices.ok([
            "device", "add", "--identity", dir + "/bob/bob.identity", "--card", dir + "/bob/bob.card.json",
            "--request", dir + "/tablet/bob.tablet.request.json",
        ])
        let list = try DeviceList.parse(Array(added.stdout.utf8))
        #expect(list.formatVersion == 3)
        #expect(list.devices.map(\.currentKey.publicKey.suite) == [.classical, .xwing])
        let tablet = try Identity.load(path: dir + "/tablet/bob.identity")
        #expect(tablet.currentDeviceKey.privateKey.suite == .xwing)

        let sent = try await Devices.text(dir)
        #expect(sent.status == 0, "\(sent.stderr)")
        let lines = try await Devices.lines(sent)
        #expect(lines.map { $0["device"] as? String } == ["phone", "tablet"])
        let bodies = try lines.map { Array(try #require($0["body"] as? String).utf8) }
        #expect(bodies.map(\.count) == [2233, 4093])
        let envelopes = try bodies.map { try APNsAlertTransport.envelope(fromBody: $0) }
        #expect(envelopes.map(\.suite) == [.classical, .xwing])
        let alice = try DeviceList.load(path: dir + "/alice/alice.card.json")
        let opened = try PushPayload.open(
            body: bodies[1],
            deviceKey: { tablet.deviceKey(for: $0, nowMs: UInt64(Date().timeIntervalSince1970 * 1000)) },
            signingKey: { ContactBook([alice]).signingKey(userID: $0, keyID: $1) }
        )
        #expect(opened.message.content == .text(TextMessage(threadID: "", title: "", body: "hi")))
    }

    @Test("keygen --suite xwing starts a device on X-Wing: a format-3 card; an unknown suite is a usage error")
    func keygenXWing() async throws {
        let dir = NSTemporaryDirectory() + "e2ee-send-suite-\(UUID().uuidString)"
        try await Devices.ok(["keygen", "--user-id", "carol", "--out-dir", dir, "--suite", "xwing"])
        let card = try DeviceList.load(path: dir + "/carol.card.json")
        #expect(card.formatVersion == 3)
        #expect(card.devices[0].currentKey.publicKey.suite == .xwing)
        #expect(try Identity.load(path: dir + "/carol.identity").currentDeviceKey.privateKey.suite == .xwing)
        let bad = try await SendCLITests.run(["keygen", "--user-id", "dave", "--out-dir", dir, "--suite", "kyber"])
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect(bad.stderr.contains("Please provide one of 'classical' and 'xwing'."), "\(bad.stderr)")
        // The names come from CryptoSuite.all: the help lists each suite there, with the default.
        let help = try await SendCLITests.run(["keygen", "--help"])
        let names = CryptoSuite.all.map(\.name).joined(separator: ", ")
        let words = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("(values: \(names); default: classical)"), "\(help.stdout)")
    }
}
