import APNsGateway
@_spi(Vectors) import E2EECore
import Foundation
import Logging
import Sender
import TestSupport
import Testing

@testable import Relay

/// `e2ee-send --relay` as a process against the relay running in this process (TLS + HTTP/2 on loopback) and the
/// local APNs gateway: the sender holds no APNs key, fetches and verifies the recipient's list from the relay,
/// seals one envelope per deliverable device and submits them with the recipient's delivery token.
@Suite("e2ee-send --relay: sender → relay → APNs gateway")
struct RelaySendCLITests {
    /// Everything one test runs against; `stop()` shuts every client and server down.
    struct Setup {
        let fixture: ServiceFixture
        let gateway: GatewayFixture
        let apns: APNsClient
        let relay: RelayEndToEndTests.RunningRelay
        let bob: TestUser
        let folder: TemporaryFolder
        let token: DeliveryToken

        /// Bob (phone, tablet, watch) published, every device registered, one delivery token; with
        /// `watchGoneAtAPNs`, APNs (the gateway) has forgotten the watch's token (it answers 410).
        static func start(watchGoneAtAPNs: Bool = false) async throws -> Setup {
            let fixture = try await ServiceFixture()
            var registry = DeviceRegistry()
            if watchGoneAtAPNs {
                registry.markUnregistered(
                    TestUser.token("watch"),
                    at: Date(timeIntervalSince1970: 1_700_000_000)
                )
            }
            let gateway = try await GatewayFixture.start(devices: registry)
            let apns = APNsClient(configuration: try gateway.clientConfiguration(), logger: Logger(label: "apns"))
            let relay: RelayEndToEndTests.RunningRelay
            do {
                relay = try await RelayEndToEndTests.RunningRelay.start(
                    fixture: fixture,
                    clients: ["development": apns]
                )
            } catch {
                await apns.shutdown()
                await gateway.stop()
                await fixture.cleanup()
                throw error
            }
            let setup = Setup(
                fixture: fixture,
                gateway: gateway,
                apns: apns,
                relay: relay,
                bob: try TestUser.make("bob", devices: ["phone", "tablet", "watch"]),
                folder: try TemporaryFolder(),
                token: DeliveryToken()
            )
            do {
                try await setup.prepare()
            } catch {
                await setup.stop()
                throw error
            }
            return setup
        }

        var url: String { "https://127.0.0.1:\(self.relay.port)" }

        /// Bob's side through a RelayClient (with the relay's clock), alice's identity and bob's token on disk.
        func prepare() async throws {
            let client = try RelayClient(baseURL: self.url, trustedCAPEMPath: self.relay.caPath, timeout: .seconds(60))
            do {
                let now = UInt64(self.fixture.clock.nowMs)
                _ = try await client.publish(self.bob.list)
                for device in self.bob.devices {
                    try await client.registerPush(
                        userID: "bob",
                        deviceID: device.deviceID,
                        address: TestUser.address(device.deviceID, topic: GatewayFixture.topic),
                        signingKey: device.signingKey,
                        nowMs: now
                    )
                }
                try await client.setDeliveryTokens(
                    userID: "bob",
                    deviceID: "phone",
                    tokens: [self.token],
                    signingKey: self.bob.devices[0].signingKey,
                    nowMs: now
                )
            } catch {
                await client.shutdown()
                throw error
            }
            await client.shutdown()
            let alice = try Identity.generate(
                userID: "alice",
                displayName: "Alice",
                deviceID: "laptop",
                nowMs: UInt64(self.fixture.clock.nowMs)
            )
            try alice.save(path: self.folder.file("alice.identity"))
            try FileManager.default.createDirectory(
                atPath: self.folder.file("contacts"),
                withIntermediateDirectories: true
            )
            try self.writeToken(self.token, to: self.folder.file("contacts/bob.delivery-token"))
        }

        func writeToken(_ token: DeliveryToken, to path: String) throws {
            try SecretFile.write(path: path, bytes: SecureBytes(copying: Array((token.hex + "\n").utf8)))
        }

        /// `e2ee-send <args> --identity alice --contacts … --relay … --relay-ca …`.
        func send(_ args: [String], stdin: String = "") async throws -> ProcessOutput {
            try await ChildProcess.run(
                "e2ee-send",
                args + [
                    "--identity", self.folder.file("alice.identity"), "--pins", self.folder.file("pins.json"),
                    "--contacts", self.folder.file("contacts"), "--relay", self.url, "--relay-ca", self.relay.caPath,
                    "--relay-timeout", "120",
                ],
                stdin: .bytes(Array(stdin.utf8))
            )
        }

        func stop() async {
            try? await self.relay.stop()
            await self.apns.shutdown()
            await self.gateway.stop()
            await self.fixture.cleanup()
            self.folder.cleanup()
        }
    }

    /// Runs `body` with a fresh setup, stopping it however `body` ends.
    static func with(watchGoneAtAPNs: Bool = false, _ body: (Setup) async throws -> Void) async throws {
        let setup = try await Setup.start(watchGoneAtAPNs: watchGoneAtAPNs)
        do {
            try await body(setup)
        } catch {
            await setup.stop()
            throw error
        }
        await setup.stop()
    }

    static func lines(_ stdout: String) throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
    }

    @Test("a text and a call reach every device through the relay with identical uniform headers")
    func textAndCall() async throws {
        try await Self.with(watchGoneAtAPNs: true) { setup in
            // The text goes to all three registered devices; APNs answers 410 for the watch.
            let text = try await setup.send(["text", "--to", "bob", "--body", "hello through the relay"])
            #expect(text.status == 0, "\(text.stderr)")
            let textLines = try Self.lines(text.stdoutText)
            #expect(textLines.map { $0["device"] as? String } == ["phone", "tablet", "watch"])
            #expect(textLines.allSatisfy { $0["ok"] as? Bool == true && $0["relay_status"] as? Int == 202 })
            #expect(textLines.allSatisfy { ($0["relay_push_id"] as? String) == ($0["apns_id"] as? String) })
            try await waitUntil(tries: 12_000, every: .milliseconds(10)) {
                try await setup.fixture.store.counts() == [.delivered: 2, .unregistered: 1]
            }
            #expect(try await setup.fixture.store.counts() == [.delivered: 2, .unregistered: 1])

            // The relay now shows the watch as unregistered: the call skips it and says so.
            let call = try await setup.send(["call", "--to", "bob", "--video"])
            #expect(call.status == 0, "\(call.stderr)")
            let callLines = try Self.lines(call.stdoutText)
            #expect(callLines.map { $0["device"] as? String } == ["phone", "tablet", "watch"])
            #expect(callLines[0]["ok"] as? Bool == true && callLines[1]["ok"] as? Bool == true)
            #expect(callLines[2]["ok"] as? Bool == false && callLines[2]["skipped"] as? String == "unregistered")
            #expect(callLines[2]["relay_push_id"] == nil)
            #expect(call.stderr.contains("skipped device watch"))
            try await waitUntil(tries: 12_000, every: .milliseconds(10)) { setup.gateway.sink.records.count >= 4 }

            let records = setup.gateway.sink.records
            #expect(records.count == 4)
            // Each accepted push arrived at APNs with the relay's push id as apns-id, to the device it was sealed for.
            let sent = (textLines.prefix(2) + callLines.prefix(2)).map {
                (($0["relay_push_id"] as? String) ?? "", ($0["device"] as? String) ?? "")
            }
            // (The relay delivers one submit's pushes concurrently: they are matched by apns-id, not by order.)
            let deviceOf = Dictionary(sent, uniquingKeysWith: { a, _ in a })
            #expect(deviceOf.count == 4)
            #expect(Set(records.map { $0.apnsID.lowercased() }) == Set(deviceOf.keys))
            for record in records {
                let deviceID = deviceOf[record.apnsID.lowercased()] ?? "-"
                #expect(record.deviceToken == TestUser.token(deviceID))
            }
            // Uniform: the same headers (apns-id aside) and the same body length for a text and a call.
            let headerSets = Set(records.map { $0.headers.filter { $0.key != "apns-id" } })
            #expect(headerSets.count == 1)
            #expect(
                headerSets.first
                    == [
                        "apns-push-type": "alert", "apns-priority": "10", "apns-expiration": "0",
                        "apns-topic": GatewayFixture.topic,
                    ]
            )
            #expect(Set(records.map { $0.bodyBytes.count }).count == 1)
            // Each body opens on its device with that device's key, and carries what alice sent.
            let alice = try Identity.load(path: setup.folder.file("alice.identity"))
            var kinds: [MessageKind] = []
            for record in records {
                let device = setup.bob.device(deviceOf[record.apnsID.lowercased()] ?? "phone")
                let opened = try PushPayload.open(
                    body: record.bodyBytes,
                    deviceKey: { id in device.deviceKeys.first { $0.keyID == id }?.privateKey },
                    signingKey: { user, _ in user == "alice" ? alice.signingKey.publicKey : nil }
                )
                kinds.append(opened.message.content.kind)
            }
            #expect(kinds.filter { $0 == .text }.count == 2)
            #expect(kinds.filter { $0 == .callInvite }.count == 2)
        }
    }

    @Test("a list with a device the user key did not sign is refused: exit 76, nothing submitted")
    func injectedDeviceRefused() async throws {
        try await Self.with { setup in
            let mallory = try TestUser.make("bob", devices: ["ghost"])
            let forged = setup.bob.list.withDevices(
                setup.bob.list.devices + mallory.list.devices,
                listVersion: setup.bob.list.listVersion + 1
            )
            _ = try await setup.fixture.store.publish(
                NewList(
                    userID: "bob",
                    userSigningKey: setup.bob.list.userSigningKey.rawRepresentation,
                    listVersion: setup.bob.list.listVersion + 1,
                    digest: forged.digest,
                    json: forged.jsonData(),
                    devices: forged.devices.map { ($0.deviceID, $0.signingKey.rawRepresentation) }
                ),
                nowMs: setup.fixture.clock.nowMs
            )
            let result = try await setup.send(["text", "--to", "bob", "--body", "to a ghost"])
            #expect(result.status == 76)
            #expect(result.stderr.contains("device-not-signed-in"))
            #expect(result.stdoutText.isEmpty)
            #expect(try await setup.fixture.store.counts() == [:])
        }
    }

    /// Stores `json` as bob's list version `version` at the relay, bypassing publish's checks (as a compromised
    /// server could): the store's columns stay bob's, the served bytes are `json`.
    static func serve(_ json: [UInt8], version: UInt64, setup: Setup) async throws {
        let bob = setup.bob.list
        _ = try await setup.fixture.store.publish(
            NewList(
                userID: "bob",
                userSigningKey: bob.userSigningKey.rawRepresentation,
                listVersion: version,
                digest: Array(repeating: UInt8(truncatingIfNeeded: version), count: 32),
                json: json,
                devices: bob.devices.map { ($0.deviceID, $0.signingKey.rawRepresentation) }
            ),
            nowMs: setup.fixture.clock.nowMs
        )
    }

    @Test("the relay serves a list that is not well formed, or another user's: malformed-list 65, user-id-mismatch 76")
    func servedListRefusedByCode() async throws {
        try await Self.with { setup in
            // The same codes as a card file's (ListRefusalCLITests): one code for one fault, wherever the list came from.
            try await Self.serve(
                Array(#"{"format":"e2ee-device-list","version":2,"user_id":"bob"}"#.utf8),
                version: setup.bob.list.listVersion + 1,
                setup: setup
            )
            let malformed = try await setup.send(["text", "--to", "bob", "--body", "x"])
            #expect(malformed.status == 65, "\(malformed.stderr)")
            #expect(malformed.stderr.contains("not a well-formed device list"), "\(malformed.stderr)")
            let mallory = try TestUser.make("mallory", devices: ["phone"])
            try await Self.serve(mallory.list.jsonData(), version: setup.bob.list.listVersion + 2, setup: setup)
            let swapped = try await setup.send(["batch"], stdin: #"{"kind":"text","to":"bob","body":"x"}"# + "\n")
            #expect(swapped.status == 76, "\(swapped.stderr)")
            #expect(try Self.lines(swapped.stdoutText).map { $0["error"] as? String } == ["user-id-mismatch"])
            #expect(try await setup.fixture.store.counts() == [:])
            // Nothing pinned (no pins file), nor the card kept.
            #expect(!FileManager.default.fileExists(atPath: setup.folder.file("pins.json")))
            #expect(!FileManager.default.fileExists(atPath: setup.folder.file("contacts/bob.card.json")))
        }
    }

    @Test(
        "answer | batch --relay on bob's phone: every device of bob gets the cancel, the phone included, with the token relay tokens wrote"
    )
    func ownUserSends() async throws {
        try await Self.with { setup in
            // bob's phone as `relay tokens` leaves it: the identity and bob's token next to it; an empty contacts
            // folder (no guessed copy of bob's own token).
            let phone = setup.folder.file("bob/bob.identity")
            try FileManager.default.createDirectory(
                atPath: setup.folder.file("bob/contacts"),
                withIntermediateDirectories: true
            )
            try setup.bob.device("phone").save(path: phone)
            try setup.writeToken(setup.token, to: setup.folder.file("bob/bob.delivery-token"))
            let flags = [
                "--identity", phone, "--contacts", setup.folder.file("bob/contacts"), "--pins",
                setup.folder.file("bob/pins.json"), "--relay", setup.url, "--relay-ca", setup.relay.caPath,
            ]
            let line = #"{"call_id":"\#(UUID().uuidString)","kind":"cancel","reason":"answeredElsewhere","to":"bob"}"#
            let sent = try await ChildProcess.run(
                "e2ee-send",
                ["batch"] + flags,
                stdin: .bytes(Array((line + "\n").utf8))
            )
            #expect(sent.status == 0, "\(sent.stderr)")
            let lines = try Self.lines(sent.stdoutText)
            #expect(lines.map { $0["device"] as? String } == ["phone", "tablet", "watch"])
            #expect(lines.allSatisfy { $0["ok"] as? Bool == true && $0["relay_status"] as? Int == 202 })
            #expect(try await setup.fixture.store.counts().values.reduce(0, +) == 3)
            // The relay's list became bob's card in the contacts folder: an offline send later finds it.
            #expect(try DeviceList.load(path: setup.folder.file("bob/contacts/bob.card.json")) == setup.bob.list)

            // carol has one device that never registered a push address: nothing can reach her own devices, which is
            // no failure (exit 0, one skipped line and a note), so `set -e` scripts go on.
            let carol = try TestUser.make("carol", devices: ["phone"])
            _ = try await setup.fixture.service.publish(userID: "carol", body: carol.list.jsonData())
            try carol.device("phone").save(path: setup.folder.file("carol.identity"))
            let alone = try await ChildProcess.run(
                "e2ee-send",
                [
                    "batch", "--identity", setup.folder.file("carol.identity"), "--relay", setup.url, "--relay-ca",
                    setup.relay.caPath,
                ],
                stdin: .bytes(Array((line.replacingOccurrences(of: "\"bob\"", with: "\"carol\"") + "\n").utf8))
            )
            #expect(alone.status == 0, "\(alone.stderr)")
            let skipped = try Self.lines(alone.stdoutText)
            #expect(skipped.map { $0["skipped"] as? String } == ["none"])
            #expect(skipped.map { $0["device"] as? String } == ["phone"])
        }
    }

    @Test("a wrong delivery token: exit 77 delivery-token-refused, nothing queued")
    func wrongToken() async throws {
        try await Self.with { setup in
            let other = setup.folder.file("other.delivery-token")
            try setup.writeToken(DeliveryToken(), to: other)
            let result = try await setup.send(["text", "--to", "bob", "--body", "hi", "--delivery-token-file", other])
            #expect(result.status == 77)
            #expect(result.stderr.contains("bad-delivery-token"))
            let lines = try Self.lines(result.stdoutText)
            #expect(lines.count == 3)
            #expect(
                lines.allSatisfy { $0["ok"] as? Bool == false && $0["error"] as? String == "delivery-token-refused" }
            )
            #expect(try await setup.fixture.store.counts() == [:])
        }
    }

    @Test("the relay's disk full (507 storage-full): exit 75 relay-unavailable, saying to send again; nothing queued")
    func storageFull() async throws {
        try await Self.with { setup in
            // The relay's SQLite file may not grow any more: the first submit that needs a new page is refused
            // with 507 storage-full (the ones before still fit in the pages the file has).
            try setup.fixture.store.capAtCurrentSize()
            var refused = false
            for round in 0..<30 where !refused {
                let queued = try await setup.fixture.pushCount()
                let result = try await setup.send(["text", "--to", "bob", "--body", "round \(round)"])
                guard result.status != 0 else { continue }
                refused = true
                #expect(result.status == 75, "\(result.stderr)")
                #expect(result.stderr.contains("the relay answered storage-full"), "\(result.stderr)")
                #expect(result.stderr.contains("send again in 30 s"), "\(result.stderr)")
                let lines = try Self.lines(result.stdoutText)
                #expect(lines.count == 3, "\(result.stdoutText)")
                #expect(
                    lines.allSatisfy { $0["ok"] as? Bool == false && $0["error"] as? String == "relay-unavailable" },
                    "\(result.stdoutText)"
                )
                #expect(try await setup.fixture.pushCount() == queued)
            }
            #expect(refused, "no submit was refused with the database capped at its size")
            let metrics = String(decoding: setup.fixture.metrics.render(), as: UTF8.self)
            #expect(metrics.contains(#"relay_submits_total{outcome="storage-full"} 1"#), "\(metrics)")
        }
    }

    @Test("batch --relay: one submit per line, results in input order; a bad line fails alone")
    func batch() async throws {
        try await Self.with { setup in
            let input = """
                {"kind":"text","to":"bob","body":"one"}
                {"kind":"nope","to":"bob"}
                {"kind":"cancel","to":"bob","call_id":"\(UUID().uuidString)"}

                """
            let result = try await setup.send(["batch"], stdin: input)
            #expect(result.status == 65, "\(result.stderr)")
            let lines = try Self.lines(result.stdoutText)
            #expect(lines.map { $0["line"] as? Int } == [1, 1, 1, 2, 3, 3, 3])
            #expect(lines.map { $0["ok"] as? Bool } == [true, true, true, false, true, true, true])
            #expect(lines[3]["error"] as? String == "bad-request")
            #expect(try await setup.fixture.store.counts().values.reduce(0, +) == 6)
        }
    }
}

/// `e2ee-send relay publish|register|tokens` as processes against the relay in this process (wall clock: the
/// device-signed requests carry the process's time).
@Suite("e2ee-send relay publish|register|tokens")
struct RelayDeviceCLITests {
    @Test("publish a card, register a push address, create and set a delivery token")
    func publishRegisterTokens() async throws {
        let fixture = try await ServiceFixture(clockStart: WallClock.system.nowMs)
        let relay: RelayEndToEndTests.RunningRelay
        do {
            relay = try await RelayEndToEndTests.RunningRelay.start(fixture: fixture, clients: [:])
        } catch {
            await fixture.cleanup()
            throw error
        }
        let folder = try TemporaryFolder()
        do {
            let now = UInt64(WallClock.system.nowMs)
            let bob = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: now)
            try bob.save(path: folder.file("bob.identity"))
            let list = try DeviceList.create(for: bob, push: nil, nowMs: now)
            try Data(list.jsonData()).write(to: URL(fileURLWithPath: folder.file("bob.card.json")))
            let flags = [
                "--relay", "https://127.0.0.1:\(relay.port)", "--relay-ca", relay.caPath, "--relay-timeout", "120",
            ]

            let published = try await ChildProcess.run(
                "e2ee-send",
                ["relay", "publish", "--card", folder.file("bob.card.json")] + flags
            )
            #expect(published.status == 0, "\(published.stderr)")
            #expect(published.stdoutText == #"{"list_version":1,"stored":true}"# + "\n")
            let again = try await ChildProcess.run(
                "e2ee-send",
                ["relay", "publish", "--card", folder.file("bob.card.json")] + flags
            )
            #expect(again.stdoutText == #"{"list_version":1,"stored":false}"# + "\n")

            let token = String(repeating: "ab", count: 32)
            let registered = try await ChildProcess.run(
                "e2ee-send",
                [
                    "relay", "register", "--identity", folder.file("bob.identity"), "--device-token", token, "--topic",
                    "com.example.app",
                ] + flags
            )
            #expect(registered.status == 0, "\(registered.stderr)")
            #expect(registered.stdoutText == #"{"device":"phone","push":"active"}"# + "\n")
            let devices = try await fixture.store.devices(userID: "bob")
            #expect(
                devices.map(\.address)
                    == [
                        RegisteredAddress(
                            apns: APNsAddress(topic: "com.example.app", deviceToken: token),
                            environment: "development"
                        )
                    ]
            )

            // --push-address: an APNs one (production), then one of a service this relay does not deliver through.
            let other = String(repeating: "cd", count: 32)
            let viaAddress = try await ChildProcess.run(
                "e2ee-send",
                [
                    "relay", "register", "--identity", folder.file("bob.identity"), "--push-address",
                    "apns:com.example.app/" + other.uppercased(), "--environment", "production",
                ] + flags
            )
            #expect(viaAddress.status == 0, "\(viaAddress.stderr)")
            #expect(
                try await fixture.store.devices(userID: "bob").map(\.address)
                    == [
                        RegisteredAddress(
                            apns: APNsAddress(topic: "com.example.app", deviceToken: other),
                            environment: "production"
                        )
                    ]
            )
            let unsupported = try await ChildProcess.run(
                "e2ee-send",
                ["relay", "register", "--identity", folder.file("bob.identity"), "--push-address", "fcm:tok-1"] + flags
            )
            #expect(unsupported.status == 69, "\(unsupported.stderr)")
            #expect(unsupported.stderr.contains("unsupported-push-service"), "\(unsupported.stderr)")
            for (extra, message) in [
                (
                    ["--push-address", "fcm:tok-1", "--environment", "production"],
                    "--environment is for APNs addresses"
                ),
                ([], "give --device-token (with --topic), or --push-address <service>:<address>"),
            ] {
                let refused = try await ChildProcess.run(
                    "e2ee-send",
                    ["relay", "register", "--identity", folder.file("bob.identity")] + extra + flags
                )
                #expect(refused.status == 64, "\(extra): \(refused.stderr)")
                #expect(refused.stderr.contains(message), "\(extra): \(refused.stderr)")
            }
            // The APNs address registered last stands.
            #expect(try await fixture.store.devices(userID: "bob").first?.address?.environment == "production")

            let tokenFile = folder.file("bob.delivery-token")
            let tokens = try await ChildProcess.run(
                "e2ee-send",
                ["relay", "tokens", "--identity", folder.file("bob.identity"), "--token-file", tokenFile, "--create"]
                    + flags
            )
            #expect(tokens.status == 0, "\(tokens.stderr)")
            #expect(tokens.stdoutText == #"{"tokens":1}"# + "\n")
            let mode = try FileManager.default.attributesOfItem(atPath: tokenFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let hex = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .newlines)
            let saved = try #require(DeliveryToken(hex: hex))
            #expect(try await fixture.store.isDeliveryToken(saved.sha256, of: "bob"))

            // A refusal names the relay's reason and exits 69: a device that is not in bob's list.
            let stranger = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "laptop", nowMs: now)
            try stranger.save(path: folder.file("stranger.identity"))
            let refused = try await ChildProcess.run(
                "e2ee-send",
                ["relay", "register", "--identity", folder.file("stranger.identity"), "--device-token", token] + flags
            )
            #expect(refused.status == 69)
            #expect(refused.stderr.contains("unknown-device"))
            // What to do, and nothing about a queue: a register, publish or tokens request queues nothing.
            #expect(refused.stderr.contains("sign it in on the device holding the user key"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("queued"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("send again"), "\(refused.stderr)")

            // relay tokens without --token-file uses bob.delivery-token next to the identity (made above): the set
            // stays that token; only --close empties it, and --close goes with no token file.
            let defaulted = try await ChildProcess.run(
                "e2ee-send",
                ["relay", "tokens", "--identity", folder.file("bob.identity")] + flags
            )
            #expect(defaulted.status == 0, "\(defaulted.stderr)")
            #expect(defaulted.stdoutText == #"{"tokens":1}"# + "\n")
            #expect(try await fixture.store.isDeliveryToken(saved.sha256, of: "bob"))
            let mixed = try await ChildProcess.run(
                "e2ee-send",
                ["relay", "tokens", "--identity", folder.file("bob.identity"), "--close", "--token-file", tokenFile]
                    + flags
            )
            #expect(mixed.status == 64, "\(mixed.stderr)")
            #expect(try await fixture.store.isDeliveryToken(saved.sha256, of: "bob"))
            let closed = try await ChildProcess.run(
                "e2ee-send",
                ["relay", "tokens", "--identity", folder.file("bob.identity"), "--close"] + flags
            )
            #expect(closed.status == 0, "\(closed.stderr)")
            #expect(closed.stdoutText == #"{"tokens":0}"# + "\n")
            #expect(closed.stderr.contains("closing bob to every sender"))
            #expect(try await !fixture.store.isDeliveryToken(saved.sha256, of: "bob"))
        } catch {
            try? await relay.stop()
            await fixture.cleanup()
            folder.cleanup()
            throw error
        }
        try await relay.stop()
        await fixture.cleanup()
        folder.cleanup()
    }
}
