import E2EECore
import Foundation
import TestSupport
import Testing

/// `e2ee-send` with users who have several devices, as processes: signing devices in and out, first-use pins,
/// refusals with exit 76 and their way out, fan-out lines naming the device.
@Suite("e2ee-send command line: several devices")
struct DeviceCLITests {
    typealias CLI = SendCLITests
    static let phoneToken = String(repeating: "a1", count: 32)
    static let tabletToken = String(repeating: "b2", count: 32)
    static let topic = "com.example.app"

    /// alice in <dir>/alice; bob's phone (user key) in <dir>/bob with the list; bob's tablet signed in, in
    /// <dir>/tablet.
    static func setUp() async throws -> String {
        let dir = NSTemporaryDirectory() + "e2ee-send-devices-\(UUID().uuidString)"
        try await Self.ok(["keygen", "--user-id", "alice", "--out-dir", dir + "/alice"])
        try await Self.ok([
            "keygen", "--user-id", "bob", "--device-id", "phone", "--out-dir", dir + "/bob", "--device-token",
            Self.phoneToken, "--topic", Self.topic,
        ])
        let request = try await Self.ok([
            "device", "request", "--user-id", "bob", "--device-id", "tablet", "--out-dir", dir + "/tablet",
            "--device-token", Self.tabletToken, "--topic", Self.topic,
        ])
        #expect(request.stdout == dir + "/tablet/bob.tablet.request.json\n")
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/tablet/bob.identity")[.posixPermissions]
        #expect(mode as? Int == 0o600)
        let added = try await Self.ok([
            "device", "add", "--identity", dir + "/bob/bob.identity", "--card", dir + "/bob/bob.card.json",
            "--request", dir + "/tablet/bob.tablet.request.json",
        ])
        let printed = try DeviceList.parse(Array(added.stdout.utf8))
        #expect(printed.listVersion == 2)
        #expect(printed.devices.map(\.deviceID) == ["phone", "tablet"])
        #expect(try DeviceList.load(path: dir + "/bob/bob.card.json") == printed)
        return dir
    }

    @discardableResult
    static func ok(_ arguments: [String], stdin: String = "") async throws -> CLI.Result {
        let r = try await CLI.run(arguments, stdin: stdin)
        #expect(r.status == 0, "\(arguments.prefix(2)): exit \(r.status), stderr: \(r.stderr)")
        return r
    }

    static func text(_ dir: String, _ extra: [String] = []) async throws -> CLI.Result {
        try await CLI.run(
            [
                "text", "--identity", dir + "/alice/alice.identity", "--contacts", dir + "/bob", "--to", "bob",
                "--body", "hi",
            ]
                + extra
        )
    }

    static func lines(_ r: CLI.Result) async throws -> [[String: Any]] {
        try r.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test(
        "one line per device naming it; first use pins and prints the fingerprint once; a removed device gets nothing"
    )
    func fanOutAndPins() async throws {
        let dir = try await Self.setUp()
        let fingerprint = try DeviceList.load(path: dir + "/bob/bob.card.json").fingerprint
        let first = try await Self.text(dir)
        #expect(first.status == 0, "\(first.stderr)")
        let lines = try await Self.lines(first)
        #expect(lines.map { $0["device"] as? String } == ["phone", "tablet"])
        #expect(lines.map { $0["device_token"] as? String } == [Self.phoneToken, Self.tabletToken])
        let pinned = "e2ee-send: pinned bob on first use: fingerprint \(fingerprint); compare it with bob\n"
        #expect(first.stderr == pinned)
        #expect(FileManager.default.fileExists(atPath: dir + "/alice/pins.json"))
        let again = try await Self.text(dir)
        #expect(again.status == 0 && again.stderr.isEmpty, "\(again.stderr)")
        // --device-token with two devices: a usage error naming the rule.
        let token = try await Self.text(dir, ["--device-token", String(repeating: "cc", count: 32)])
        #expect(token.status == 64)
        #expect(token.stderr.contains("only names the device of a user with one device; bob has 2 (phone, tablet)"))
        // device list
        let listed = try await Self.ok(["device", "list", "--card", dir + "/bob/bob.card.json"])
        #expect(listed.stdout.contains("fingerprint \(fingerprint)\nlist version 2, issued "))
        #expect(listed.stdout.contains("  tablet: signing key ") && listed.stdout.contains("push yes"))
        // remove the tablet: the next text reaches the phone only
        let removed = try await Self.ok([
            "device", "remove", "--identity", dir + "/bob/bob.identity", "--card", dir + "/bob/bob.card.json",
            "--device-id", "tablet",
        ])
        #expect(try DeviceList.parse(Array(removed.stdout.utf8)).listVersion == 3)
        let after = try await Self.text(dir)
        await #expect(try Self.lines(after).map { $0["device"] as? String } == ["phone"])
        // the phone cannot remove itself
        let selfRemove = try await CLI.run([
            "device", "remove", "--identity", dir + "/bob/bob.identity", "--card", dir + "/bob/bob.card.json",
            "--device-id", "phone",
        ])
        #expect(selfRemove.status == 64)
        #expect(selfRemove.stderr.contains("a device cannot remove itself"))
    }

    @Test("--deliver with two devices: one result line per device, in list order, exit code of the first failure")
    func deliverPerDevice() async throws {
        let dir = try await Self.setUp()
        let made = try await ChildProcess.run(
            "e2ee-gateway",
            ["provider-key", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--out-dir", dir],
            stdout: .discard
        )
        try #require(made.status == 0, "\(made.stderr)")
        // Nothing listens on port 9 of loopback: both pushes fail for now (75), each with its own line.
        let r = try await Self.text(
            dir,
            [
                "--deliver", "--apns-url", "https://127.0.0.1:9", "--apns-key-file", "\(dir)/AuthKey_KEY1234567.p8",
                "--apns-key-id", "KEY1234567", "--apns-team-id", "TEAM123456", "--timeout", "5",
            ]
        )
        #expect(r.status == 75, "\(r.stderr)")
        let lines = try await Self.lines(r)
        #expect(lines.map { $0["device"] as? String } == ["phone", "tablet"])
        #expect(lines.map { $0["device_token"] as? String } == [Self.phoneToken, Self.tabletToken])
        #expect(lines.allSatisfy { $0["ok"] as? Bool == false && $0["line"] as? Int == 1 })
        #expect(Set(lines.compactMap { $0["message_id"] as? String }).count == 1)
    }

    @Test("refusals exit 76 and say what to do: rollback, injected device, changed key until contact accept")
    func refusals() async throws {
        let dir = try await Self.setUp()
        let v2 = try Data(contentsOf: URL(fileURLWithPath: dir + "/bob/bob.card.json"))
        await #expect(try Self.text(dir).status == 0)
        // a newer list (tablet's new keys) moves the pin; serving v2 again is a rollback
        let rotated = try await Self.ok([
            "rotate", "--identity", dir + "/tablet/bob.identity", "--card", dir + "/bob/bob.card.json",
        ])
        #expect(rotated.stderr.contains("device add --request"))
        #expect(try DeviceRequest.parse(Array(rotated.stdout.utf8)).deviceID == "tablet")
        let v3 = try await Self.ok([
            "device", "add", "--identity", dir + "/bob/bob.identity", "--card", dir + "/bob/bob.card.json",
            "--request", dir + "/tablet/bob.tablet.request.json",
        ])
        let list3 = try DeviceList.parse(Array(v3.stdout.utf8))
        #expect(list3.listVersion == 3)
        #expect(list3.device(named: "tablet")?.deviceKeys.count == 2)
        await #expect(try Self.text(dir).status == 0)
        try v2.write(to: URL(fileURLWithPath: dir + "/bob/bob.card.json"))
        let rollback = try await Self.text(dir)
        #expect(rollback.status == 76)
        #expect(rollback.stderr.contains("version 2, older than version 3"), "\(rollback.stderr)")
        #expect(rollback.stdout.isEmpty)
        // an injected device: device-not-signed-in
        var json = try #require(try JSONSerialization.jsonObject(with: Data(list3.jsonData())) as? [String: Any])
        var devices = try #require(json["devices"] as? [[String: Any]])
        // A device of another user's list (its certificate is by alice's user key), renamed.
        let alice = try Data(contentsOf: URL(fileURLWithPath: dir + "/alice/alice.card.json"))
        let aliceJSON = try #require(try JSONSerialization.jsonObject(with: alice) as? [String: Any])
        var ghost = try #require((aliceJSON["devices"] as? [[String: Any]])?.first)
        ghost["device_id"] = "ghost"
        devices.append(ghost)
        json["devices"] = devices
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: dir + "/bob/bob.card.json"))
        let injected = try await Self.text(dir)
        #expect(injected.status == 76)
        #expect(injected.stderr.contains("did not sign in"), "\(injected.stderr)")
        // bob reinstalls: a new user key is refused until alice accepts it
        try await Self.ok([
            "keygen", "--user-id", "bob", "--device-id", "phone", "--out-dir", dir + "/bob", "--device-token",
            Self.phoneToken, "--topic", Self.topic, "--force",
        ])
        let changed = try await Self.text(dir)
        #expect(changed.status == 76)
        #expect(changed.stderr.contains("user key changed") && changed.stderr.contains("e2ee-send contact accept"))
        let old = list3.fingerprint
        let new = try DeviceList.load(path: dir + "/bob/bob.card.json").fingerprint
        let show = try await Self.ok([
            "contact", "show", "--card", dir + "/bob/bob.card.json", "--identity", dir + "/alice/alice.identity",
        ])
        #expect(show.stdout.contains("pin: DIFFERS: pinned \(old), pinned version 3"))
        let accept = try await Self.ok([
            "contact", "accept", "--card", dir + "/bob/bob.card.json", "--identity", dir + "/alice/alice.identity",
        ])
        #expect(accept.stderr.contains("old fingerprint \(old), new fingerprint \(new)"))
        let works = try await Self.text(dir)
        #expect(works.status == 0, "\(works.stderr)")
        await #expect(try Self.lines(works).map { $0["device"] as? String } == ["phone"])
    }

    @Test("batch: a refused recipient fails its lines with the code, the batch goes on, exit 76")
    func batchRefusal() async throws {
        let dir = try await Self.setUp()
        try await Self.ok([
            "keygen", "--user-id", "carol", "--out-dir", dir + "/bob", "--device-token",
            String(repeating: "cc", count: 32),
        ])
        let v2 = try Data(contentsOf: URL(fileURLWithPath: dir + "/bob/bob.card.json"))
        try await Self.ok([
            "device", "remove", "--identity", dir + "/bob/bob.identity", "--card", dir + "/bob/bob.card.json",
            "--device-id", "tablet",
        ])
        let base = ["batch", "--identity", dir + "/alice/alice.identity", "--contacts", dir + "/bob"]
        let input = """
            {"kind":"text","to":"bob","body":"one"}
            {"kind":"text","to":"carol","body":"two"}
            """
        let first = try await CLI.run(base, stdin: input)
        #expect(first.status == 0, "\(first.stderr)")
        await #expect(try Self.lines(first).map { $0["device"] as? String } == ["phone", "primary"])
        try v2.write(to: URL(fileURLWithPath: dir + "/bob/bob.card.json"))
        let r = try await CLI.run(base, stdin: input + "\n" + #"{"kind":"text","to":"bob","body":"three"}"#)
        #expect(r.status == 76, "\(r.stderr)")
        let lines = try await Self.lines(r)
        #expect(lines.count == 3)
        #expect(lines[0]["error"] as? String == "list-rollback" && lines[0]["line"] as? Int == 1)
        #expect(lines[1]["device"] as? String == "primary" && lines[1]["body"] != nil)
        #expect(lines[2]["error"] as? String == "list-rollback" && lines[2]["line"] as? Int == 3)
    }

    @Test("rotate on the managing device re-signs the list and says when the old key stops; card sets a push address")
    func rotateAndCard() async throws {
        let dir = try await Self.setUp()
        let r = try await Self.ok(["rotate", "--identity", dir + "/bob/bob.identity", "--grace-hours", "0"])
        #expect(r.stderr.contains("revoked: the old key opens nothing from now on"), "\(r.stderr)")
        let list = try DeviceList.parse(Array(r.stdout.utf8))
        #expect(list.listVersion == 3)
        #expect(try DeviceList.load(path: dir + "/bob/bob.card.json") == list)
        let phone = try #require(list.device(named: "phone"))
        // Revoked: the old key is gone from the list (and from the identity).
        #expect(phone.deviceKeys.count == 1)
        let graced = try await Self.ok(["rotate", "--identity", dir + "/bob/bob.identity", "--grace-hours", "24"])
        #expect(graced.stderr.contains("the old key opens pushes until ") && graced.stderr.contains(" UTC (24 h)"))
        let kept = try #require(try DeviceList.parse(Array(graced.stdout.utf8)).device(named: "phone")).deviceKeys
        #expect(kept.count == 2 && kept[0].expiresAtMs == kept[0].retiredAtMs.map { $0 + 24 * 3_600_000 })
        // the tablet sets its push address in a copy of the list: unsigned, version unchanged
        let newToken = String(repeating: "dd", count: 32)
        let card = try await Self.ok([
            "card", "--identity", dir + "/tablet/bob.identity", "--card", dir + "/bob/bob.card.json", "--card-out",
            dir + "/tablet/bob.card.json", "--device-token", newToken, "--topic", Self.topic,
        ])
        let withPush = try DeviceList.parse(Array(card.stdout.utf8))
        #expect(withPush.listVersion == 4)  // keygen 1, add 2, two rotations
        #expect(withPush.device(named: "tablet")?.push?.apns?.deviceToken == newToken)
        #expect(try DeviceList.load(path: dir + "/tablet/bob.card.json") == withPush)
        // a request from another user is refused by device add
        try await Self.ok([
            "device", "request", "--user-id", "mallory", "--device-id", "x", "--out-dir", dir + "/mallory",
        ])
        let foreign = try await CLI.run([
            "device", "add", "--identity", dir + "/bob/bob.identity", "--card", dir + "/bob/bob.card.json",
            "--request", dir + "/mallory/mallory.x.request.json",
        ])
        #expect(foreign.status == 65)
        #expect(foreign.stderr.contains("it is for user \"mallory\""))
    }

    @Test("--push-address: any service's address in a card and a request; APNs tokens in lower case; bad ones refused")
    func pushAddress() async throws {
        let dir = NSTemporaryDirectory() + "e2ee-send-push-address-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await Self.ok([
            "keygen", "--user-id", "bob", "--device-id", "phone", "--out-dir", dir + "/bob", "--push-address",
            "fcm:tok-1/A",
        ])
        let card = try DeviceList.load(path: dir + "/bob/bob.card.json")
        #expect(card.devices.map(\.push) == [PushAddress(service: PushService(rawValue: "fcm"), address: "tok-1/A")])
        try await Self.ok([
            "device", "request", "--user-id", "bob", "--device-id", "tablet", "--out-dir", dir + "/tablet",
            "--push-address", "apns:com.example.app/" + Self.tabletToken.uppercased(),
        ])
        let request = try DeviceRequest.parse(
            Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/tablet/bob.tablet.request.json")))
        )
        #expect(request.push == PushAddress(APNsAddress(topic: "com.example.app", deviceToken: Self.tabletToken)))

        // card: set again, and written back.
        let set = try await Self.ok([
            "card", "--identity", dir + "/bob/bob.identity", "--push-address", "fcm:tok-2",
        ])
        #expect(try DeviceList.parse(Array(set.stdout.utf8)).devices.map(\.push?.address) == ["tok-2"])
        #expect(try DeviceList.load(path: dir + "/bob/bob.card.json").devices.map(\.push?.address) == ["tok-2"])

        // Refusals: exit 64 naming what is wrong, and the card unchanged.
        let cases: [([String], String)] = [
            (["--push-address", "tok-3"], "--push-address tok-3: give <service>:<address>"),
            (["--push-address", "FCM:tok-3"], "a push service is 1-32 bytes of a-z, 0-9 and '-'"),
            (["--push-address", "fcm:tok 3"], "a push address is printable ASCII without spaces"),
            (["--push-address", "apns:com.example.app/abc"], "got only 3 digits"),
            (["--push-address", "apns:no-token"], "--push-address apns:no-token: "),
            (["--push-address", "fcm:tok-3", "--device-token", Self.phoneToken], "not both"),
            (["--push-address", "fcm:tok-3", "--topic", "com.example.app"], "not both"),
        ]
        for (extra, message) in cases {
            let r = try await CLI.run(["card", "--identity", dir + "/bob/bob.identity"] + extra)
            #expect(r.status == 64, "\(extra): \(r.stderr)")
            #expect(r.stderr.contains(message), "\(extra): \(r.stderr)")
        }
        #expect(try DeviceList.load(path: dir + "/bob/bob.card.json").devices.map(\.push?.address) == ["tok-2"])
    }
}
