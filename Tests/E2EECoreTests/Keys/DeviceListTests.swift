import Crypto
@_spi(Vectors) import E2EECore
import E2EETestVectors
import Foundation
import Testing

/// DeviceList, DeviceRequest and DevicePins (docs/PROTOCOL.md §11): building and signing lists, every §11.1 rule's
/// refusal, pins and the fingerprint.
@Suite("Device lists, device requests and pins")
struct DeviceListTests {
    static let t0: UInt64 = 1_790_000_000_000

    static func identity(_ user: String, _ device: String, userKey: Bool) throws -> Identity {
        try Identity.generate(
            userID: user,
            displayName: user.capitalized,
            deviceID: device,
            withUserKey: userKey,
            nowMs: t0
        )
    }

    static func json(_ list: DeviceList) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(list.jsonData())) as? [String: Any])
    }

    static func bytes(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    // MARK: building and signing

    @Test("create: version 1, one device signed in by the user key, parses back to itself")
    func create() throws {
        let phone = try Self.identity("bob", "phone", userKey: true)
        let list = try DeviceList.create(for: phone, push: nil, nowMs: Self.t0)
        #expect(list.listVersion == 1)
        #expect(list.devices.map(\.deviceID) == ["phone"])
        #expect(list.devices[0].signingKey == phone.signingKey.publicKey)
        #expect(list.userSigningKey == phone.userSigningKey?.publicKey)
        #expect(list.userSigningKey != list.devices[0].signingKey)
        #expect(try DeviceList.parse(list.jsonData()) == list)
        try list.verifySignatures()
        let tablet = try Self.identity("bob", "tablet", userKey: false)
        #expect(throws: E2EEError(.invalidArgument, "")) {
            try DeviceList.create(for: tablet, push: nil, nowMs: Self.t0)
        }
    }

    @Test("sign in: a request becomes a certified device of the next version; re-signing it replaces its keys")
    func signIn() throws {
        let phone = try Self.identity("bob", "phone", userKey: true)
        var tablet = try Self.identity("bob", "tablet", userKey: false)
        let v1 = try DeviceList.create(for: phone, push: nil, nowMs: Self.t0)
        let v2 = try v1.signingIn(
            DeviceRequest.make(for: tablet, push: nil, nowMs: Self.t0),
            signer: phone,
            nowMs: Self.t0 + 1
        )
        #expect(v2.listVersion == 2)
        #expect(v2.issuedAtMs == Self.t0 + 1)
        #expect(v2.devices.map(\.deviceID) == ["phone", "tablet"])
        #expect(v2.devices[1].signedInAtMs == Self.t0 + 1)
        #expect(try DeviceList.parse(v2.jsonData()) == v2)
        tablet.rotate(nowMs: Self.t0 + 2)
        let v3 = try v2.signingIn(
            DeviceRequest.make(for: tablet, push: nil, nowMs: Self.t0 + 2),
            signer: phone,
            nowMs: Self.t0 + 3
        )
        #expect(v3.listVersion == 3)
        #expect(v3.devices.count == 2)
        #expect(v3.devices[1].deviceKeys.map(\.keyID) == tablet.deviceKeys.map(\.keyID))
        #expect(v3.devices[1].certificate == v2.devices[1].certificate)
    }

    @Test(
        "sign in refuses: a signer without the user key, another user's signer, another user's request, a taken device id"
    )
    func signInRefusals() throws {
        let phone = try Self.identity("bob", "phone", userKey: true)
        let tablet = try Self.identity("bob", "tablet", userKey: false)
        let mallory = try Self.identity("mallory", "phone", userKey: true)
        let v1 = try DeviceList.create(for: phone, push: nil, nowMs: Self.t0)
        let request = try DeviceRequest.make(for: tablet, push: nil, nowMs: Self.t0)
        for signer in [tablet, mallory] {
            #expect(throws: E2EEError(.invalidArgument, "")) {
                try v1.signingIn(request, signer: signer, nowMs: Self.t0)
            }
        }
        let foreign = try DeviceRequest.make(
            for: Self.identity("carol", "tablet", userKey: false),
            push: nil,
            nowMs: Self.t0
        )
        #expect(throws: E2EEError(.invalidArgument, "")) { try v1.signingIn(foreign, signer: phone, nowMs: Self.t0) }
        let impostor = try DeviceRequest.make(
            for: Self.identity("bob", "phone", userKey: false),
            push: nil,
            nowMs: Self.t0
        )
        do {
            _ = try v1.signingIn(impostor, signer: phone, nowMs: Self.t0)
            Issue.record("a second \"phone\" with another signing key was signed in")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("remove it first"))
        }
    }

    @Test("sign in refuses a 17th device")
    func seventeenthDevice() throws {
        let phone = try Self.identity("bob", "phone", userKey: true)
        var list = try DeviceList.create(for: phone, push: nil, nowMs: Self.t0)
        for n in 2...16 {
            let device = try Self.identity("bob", "device-\(n)", userKey: false)
            list = try list.signingIn(
                DeviceRequest.make(for: device, push: nil, nowMs: Self.t0),
                signer: phone,
                nowMs: Self.t0
            )
        }
        #expect(list.devices.count == 16)
        #expect(list.listVersion == 16)
        let seventeenth = try DeviceRequest.make(
            for: Self.identity("bob", "device-17", userKey: false),
            push: nil,
            nowMs: Self.t0
        )
        do {
            _ = try list.signingIn(seventeenth, signer: phone, nowMs: Self.t0)
            Issue.record("a 17th device was signed in")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("16 devices"))
        }
    }

    @Test("update keys: a rotation on the signing device is published in the next version")
    func updateKeys() throws {
        var phone = try Self.identity("bob", "phone", userKey: true)
        let v1 = try DeviceList.create(for: phone, push: nil, nowMs: Self.t0)
        phone.rotate(nowMs: Self.t0 + 10)
        let v2 = try v1.updatingKeys(of: phone, nowMs: Self.t0 + 10)
        #expect(v2.listVersion == 2)
        #expect(v2.devices[0].deviceKeys.map(\.keyID) == phone.deviceKeys.map(\.keyID))
        #expect(v2.devices[0].deviceKeys[0].retiredAtMs == Self.t0 + 10)
        #expect(v2.devices[0].deviceKeys[0].expiresAtMs == Self.t0 + 10 + Identity.defaultGracePeriodMs)
        #expect(try DeviceList.parse(v2.jsonData()) == v2)
        let tablet = try Self.identity("bob", "tablet", userKey: false)
        #expect(throws: E2EEError(.invalidArgument, "")) { try v1.updatingKeys(of: tablet, nowMs: Self.t0) }
    }

    @Test("remove: the next version without the device; refuses the signer itself, an unknown device, the last device")
    func remove() throws {
        let phone = try Self.identity("bob", "phone", userKey: true)
        let tablet = try Self.identity("bob", "tablet", userKey: false)
        let v1 = try DeviceList.create(for: phone, push: nil, nowMs: Self.t0)
        let v2 = try v1.signingIn(
            DeviceRequest.make(for: tablet, push: nil, nowMs: Self.t0),
            signer: phone,
            nowMs: Self.t0
        )
        let v3 = try v2.removing(deviceID: "tablet", signer: phone, nowMs: Self.t0 + 5)
        #expect(v3.listVersion == 3)
        #expect(v3.devices.map(\.deviceID) == ["phone"])
        try v3.verifySignatures()
        for (list, device, says) in [
            (v2, "phone", "cannot remove itself"), (v2, "laptop", "has no device"),
            (v1, "phone", "cannot remove itself"),
        ] {
            do {
                _ = try list.removing(deviceID: device, signer: phone, nowMs: Self.t0)
                Issue.record("removing \(device) succeeded")
            } catch {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains(says), "\(error.message)")
            }
        }
        // A list whose only device is not the signer's (the signer holds the user key but is not listed).
        let tabletOnly = try v2.removing(deviceID: "tablet", signer: phone, nowMs: Self.t0)
            .withDevices([v2.devices[1]])
        do {
            _ = try tabletOnly.removing(deviceID: "tablet", signer: phone, nowMs: Self.t0)
            Issue.record("the last device was removed")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("last device"), "\(error.message)")
        }
        #expect(throws: E2EEError(.invalidArgument, "")) {
            try v2.removing(deviceID: "phone", signer: tablet, nowMs: Self.t0)
        }
    }

    @Test("the push address is not signed: changing it keeps version and signature valid")
    func pushIsUnsigned() throws {
        let phone = try Self.identity("bob", "phone", userKey: true)
        let v1 = try DeviceList.create(for: phone, push: nil, nowMs: Self.t0)
        let push = PushAddress(APNsAddress(topic: "com.example.app", deviceToken: String(repeating: "ab", count: 32)))
        let moved = try v1.settingPush(push, deviceID: "phone")
        #expect(moved.listVersion == 1)
        #expect(moved.signature == v1.signature)
        #expect(moved.digest == v1.digest)
        #expect(try DeviceList.parse(moved.jsonData()).devices[0].push == push)
        let bad = PushAddress(APNsAddress(topic: "t", deviceToken: "abc"))
        #expect(throws: E2EEError(.keyFile, "")) { try v1.settingPush(bad, deviceID: "phone") }
        #expect(throws: E2EEError(.invalidArgument, "")) { try v1.settingPush(push, deviceID: "tablet") }
    }

    @Test("the legacy push form {device_token, topic} is read as an apns address and written in the current form")
    func legacyPushForm() throws {
        let phone = try Self.identity("bob", "phone", userKey: true)
        let list = try DeviceList.create(for: phone, push: nil, nowMs: Self.t0)
        let token = String(repeating: "AB", count: 32)
        var object = try Self.json(list)
        var devices = object["devices"] as! [[String: Any]]
        devices[0]["push"] = ["device_token": token, "topic": "com.example.app"]
        object["devices"] = devices
        let read = try DeviceList.parse(try Self.bytes(object))
        let push = try #require(read.devices[0].push)
        #expect(push == PushAddress(service: .apns, address: "com.example.app/" + token))
        #expect(push.apns == APNsAddress(topic: "com.example.app", deviceToken: token))
        #expect(read.signature == list.signature)
        let written = try #require(try Self.json(read)["devices"] as? [[String: Any]])[0]["push"] as? [String: String]
        #expect(written == ["service": "apns", "address": "com.example.app/" + token])
    }

    @Test("a well-formed address of a service this code does not know is kept as it is")
    func unknownPushService() throws {
        let phone = try Self.identity("bob", "phone", userKey: true)
        let push = PushAddress(service: PushService(rawValue: "fcm"), address: "opaque:token_1-2.3")
        let list = try DeviceList.create(for: phone, push: push, nowMs: Self.t0)
        let read = try DeviceList.parse(list.jsonData())
        #expect(read.devices[0].push == push)
        #expect(read.devices[0].push?.apns == nil)
    }

    // MARK: parsing (§11.1): every rule refused with a message naming it

    struct Rule: Sendable, CustomStringConvertible {
        let description: String
        let says: String
        let edit: @Sendable (inout [String: Any]) -> Void
    }

    static func editDevice(
        _ edit: @escaping @Sendable (inout [String: Any]) -> Void
    ) -> @Sendable (inout [String: Any]) -> Void {
        { object in
            var devices = object["devices"] as! [[String: Any]]
            edit(&devices[0])
            object["devices"] = devices
        }
    }

    static func editKeys(
        _ edit: @escaping @Sendable (inout [[String: Any]]) -> Void
    ) -> @Sendable (inout [String: Any]) -> Void {
        editDevice { device in
            var keys = device["device_keys"] as! [[String: Any]]
            edit(&keys)
            device["device_keys"] = keys
        }
    }

    static let rules: [Rule] = [
        Rule(description: "wrong format", says: "not a device list") { $0["format"] = "e2ee-contact-card" },
        Rule(description: "version 1 card", says: "earlier release") {
            $0["format"] = nil
            $0["version"] = 1
        },
        Rule(description: "empty user id", says: "user_id") { $0["user_id"] = "" },
        Rule(description: "long display name", says: "display_name") {
            $0["display_name"] = String(repeating: "n", count: 256)
        },
        Rule(description: "list version 0", says: "list_version") { $0["list_version"] = 0 },
        Rule(description: "time above 2^53-1", says: "2^53") { $0["issued_at_ms"] = 1 << 53 },
        Rule(description: "no devices", says: "1-16 devices") { $0["devices"] = [[String: Any]]() },
        Rule(description: "user key id", says: "user_signing_key_id") {
            $0["user_signing_key_id"] = "0000000000000000"
        },
        Rule(
            description: "device id with capitals",
            says: "device id is 1-32 characters",
            edit: editDevice { $0["device_id"] = "Phone" }
        ),
        Rule(
            description: "signing key id",
            says: "signing_key_id",
            edit: editDevice { $0["signing_key_id"] = "0000000000000000" }
        ),
        Rule(
            description: "short certificate",
            says: "certificate must be 64 bytes",
            edit: editDevice { $0["certificate"] = "00" }
        ),
        Rule(description: "short signing key", says: "32 bytes", edit: editDevice { $0["signing_key"] = "00" }),
        Rule(
            description: "short push token (legacy form)",
            says: "device token",
            edit: editDevice {
                $0["push"] = ["device_token": "abcd", "topic": "com.example.app"]
            }
        ),
        Rule(
            description: "short push token",
            says: "device token",
            edit: editDevice { $0["push"] = ["service": "apns", "address": "com.example.app/abcd"] }
        ),
        Rule(
            description: "APNs address without a topic",
            says: "topic",
            edit: editDevice { $0["push"] = ["service": "apns", "address": "/" + String(repeating: "ab", count: 32)] }
        ),
        Rule(
            description: "APNs address without '/'",
            says: "no '/'",
            edit: editDevice { $0["push"] = ["service": "apns", "address": String(repeating: "ab", count: 32)] }
        ),
        Rule(
            description: "push service in capitals",
            says: "push service",
            edit: editDevice {
                $0["push"] = ["service": "APNS", "address": "com.example.app/" + String(repeating: "ab", count: 32)]
            }
        ),
        Rule(
            description: "push service of 33 bytes",
            says: "push service",
            edit: editDevice { $0["push"] = ["service": String(repeating: "a", count: 33), "address": "x"] }
        ),
        Rule(
            description: "push address with a space",
            says: "printable ASCII",
            edit: editDevice { $0["push"] = ["service": "fcm", "address": "a b"] }
        ),
        Rule(
            description: "empty push address",
            says: "1-4096",
            edit: editDevice { $0["push"] = ["service": "fcm", "address": ""] }
        ),
        Rule(
            description: "push address of 4097 bytes",
            says: "1-4096",
            edit: editDevice { $0["push"] = ["service": "fcm", "address": String(repeating: "a", count: 4097)] }
        ),
        Rule(
            description: "push in both forms",
            says: "legacy",
            edit: editDevice {
                $0["push"] = [
                    "service": "apns", "address": "com.example.app/" + String(repeating: "ab", count: 32),
                    "topic": "com.example.app",
                ]
            }
        ),
        Rule(
            description: "device key id",
            says: "does not match",
            edit: editKeys { $0[1]["key_id"] = "0000000000000000" }
        ),
        Rule(
            description: "two current keys",
            says: "only the last device key may be current",
            edit: editKeys {
                $0[0]["retired_at_ms"] = nil
                $0[0]["expires_at_ms"] = nil
            }
        ),
        Rule(
            description: "retired key without expiry",
            says: "must have expires_at_ms",
            edit: editKeys { $0[0]["expires_at_ms"] = nil }
        ),
        Rule(
            description: "expires before retired",
            says: "expires before",
            edit: editKeys { $0[0]["expires_at_ms"] = 1 }
        ),
        Rule(
            description: "current key with expiry",
            says: "must not have expires_at_ms",
            edit: editKeys { $0[1]["expires_at_ms"] = 5 }
        ),
        Rule(
            description: "last key retired",
            says: "last device key must be current",
            edit: editKeys {
                $0[1]["retired_at_ms"] = 5
                $0[1]["expires_at_ms"] = 6
            }
        ),
        Rule(description: "no device keys", says: "1-16 device keys", edit: editKeys { $0 = [] }),
        Rule(description: "duplicate device", says: "appears twice") { object in
            var devices = object["devices"] as! [[String: Any]]
            devices.append(devices[0])
            object["devices"] = devices
        },
    ]

    @Test("each §11.1 rule is refused as key-file with a message naming it", arguments: rules)
    func parseRules(rule: Rule) throws {
        var phone = try Self.identity("bob", "phone", userKey: true)
        phone.rotate(nowMs: Self.t0 + 1)
        var object = try Self.json(try DeviceList.create(for: phone, push: nil, nowMs: Self.t0 + 1))
        rule.edit(&object)
        let bytes = try Self.bytes(object)
        do {
            _ = try DeviceList.parse(bytes)
            Issue.record("\(rule) was accepted")
        } catch {
            #expect(error.code == .keyFile, "\(rule): \(error.code) \(error.message)")
            #expect(error.message.contains(rule.says), "\(rule): \(error.message)")
        }
    }

    @Test("not JSON, JSON that is not an object, and an empty file are key-file")
    func notAList() {
        for text in ["", "[]", "null", "{", "{\"format\":\"e2ee-device-list\"}"] {
            #expect(throws: E2EEError(.keyFile, ""), "\(text)") { try DeviceList.parse(Array(text.utf8)) }
        }
    }

    // MARK: requests

    @Test("a request round trips; a changed field breaks its proof; a malformed one is key-file")
    func requests() throws {
        let tablet = try Self.identity("bob", "tablet", userKey: false)
        let request = try DeviceRequest.make(for: tablet, push: nil, nowMs: Self.t0)
        #expect(try DeviceRequest.parse(request.jsonData()) == request)
        var object = try #require(try JSONSerialization.jsonObject(with: Data(request.jsonData())) as? [String: Any])
        object["user_id"] = "carol"
        #expect(throws: E2EEError(.badSignature, "")) { try DeviceRequest.parse(try Self.bytes(object)) }
        object["user_id"] = "bob"
        object["created_at_ms"] = 1 << 53
        #expect(throws: E2EEError(.keyFile, "")) { try DeviceRequest.parse(try Self.bytes(object)) }
        object["created_at_ms"] = 1
        object["signing_key"] = "00"
        #expect(throws: E2EEError(.keyFile, "")) { try DeviceRequest.parse(try Self.bytes(object)) }
        object["format"] = "e2ee-device-list"
        #expect(throws: E2EEError(.keyFile, "")) { try DeviceRequest.parse(try Self.bytes(object)) }
    }

    // MARK: pins (§11.5)

    @Test("pins: first use, unchanged, newer, rollback, version reused, key changed until accepted")
    func pins() throws {
        let phone = try Self.identity("bob", "phone", userKey: true)
        let tablet = try Self.identity("bob", "tablet", userKey: false)
        let v1 = try DeviceList.create(for: phone, push: nil, nowMs: Self.t0)
        let v2 = try v1.signingIn(
            DeviceRequest.make(for: tablet, push: nil, nowMs: Self.t0),
            signer: phone,
            nowMs: Self.t0 + 1
        )
        var pins = DevicePins()
        #expect(try pins.check(v1, nowMs: 5) == .firstUse)
        #expect(try pins.check(v1, nowMs: 6) == .unchanged)
        #expect(try pins.check(v2, nowMs: 7) == .newer(previousVersion: 1))
        #expect(pins.pins["bob"]?.listVersion == 2)
        #expect(pins.pins["bob"]?.listDigest == v2.digest)
        #expect(pins.pins["bob"]?.pinnedAtMs == 5)
        #expect(throws: E2EEError(.listRollback, "")) { try pins.check(v1, nowMs: 8) }
        let fork = try v1.updatingKeys(of: phone, nowMs: Self.t0 + 99)
        #expect(fork.listVersion == 2)
        #expect(throws: E2EEError(.listVersionReused, "")) { try pins.check(fork, nowMs: 9) }
        let newKey = try DeviceList.create(for: Self.identity("bob", "phone", userKey: true), push: nil, nowMs: Self.t0)
        do {
            _ = try pins.check(newKey, nowMs: 10)
            Issue.record("a changed user key was accepted")
        } catch {
            #expect(error.code == .signingKeyChanged)
            #expect(error.message.contains(newKey.fingerprint))
            #expect(error.message.contains("e2ee-send contact accept"))
        }
        #expect(pins.pins["bob"]?.userSigningKey == v1.userSigningKey)
        pins.accept(newKey, nowMs: 11)
        #expect(try pins.check(newKey, nowMs: 12) == .unchanged)
        pins.remove(userID: "bob")
        #expect(try pins.check(v2, nowMs: 13) == .firstUse)
    }

    @Test("the pins file round trips, is written where asked, and a bad one is key-file")
    func pinsFile() throws {
        let alice = try DeviceList.create(
            for: Self.identity("alice", "phone", userKey: true),
            push: nil,
            nowMs: Self.t0
        )
        let bob = try DeviceList.create(for: Self.identity("bob", "phone", userKey: true), push: nil, nowMs: Self.t0)
        var pins = DevicePins()
        _ = try pins.check(alice, nowMs: 1)
        _ = try pins.check(bob, nowMs: 2)
        let path = NSTemporaryDirectory() + "e2ee-pins-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try DevicePins.load(path: path) == DevicePins())
        try pins.save(path: path)
        let loaded = try DevicePins.load(path: path)
        #expect(loaded == pins)
        #expect(loaded.pins.keys.sorted() == ["alice", "bob"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(pins.jsonData())) as? [String: Any])
        #expect(object["version"] as? Int == 1)
        for text in ["{}", "{\"version\":2,\"pins\":{}}", "{\"version\":1,\"pins\":{\"bob\":{}}}", "nope"] {
            #expect(throws: E2EEError(.keyFile, ""), "\(text)") { try DevicePins.parse(Array(text.utf8)) }
        }
    }

    // MARK: fingerprint (§11.6)

    @Test("fingerprint: five groups of four lowercase hex digits, stable across device changes, per user id and key")
    func fingerprint() throws {
        let phone = try Self.identity("bob", "phone", userKey: true)
        let v1 = try DeviceList.create(for: phone, push: nil, nowMs: Self.t0)
        let v2 = try v1.signingIn(
            DeviceRequest.make(for: Self.identity("bob", "tablet", userKey: false), push: nil, nowMs: Self.t0),
            signer: phone,
            nowMs: Self.t0
        )
        #expect(v1.fingerprint.wholeMatch(of: /[0-9a-f]{4}( [0-9a-f]{4}){4}/) != nil, "\(v1.fingerprint)")
        #expect(v1.fingerprint == v2.fingerprint)
        let key = v1.userSigningKey
        #expect(DeviceList.fingerprint(userID: "bobby", userSigningKey: key) != v1.fingerprint)
        // Recomputed with swift-crypto's SHA-256 from the §11.6 formula.
        let alice = ProjectVectors.deviceLists().aliceV1
        let input =
            Array("e2ee-push/fingerprint/v1".utf8) + [0, 5] + Array("alice".utf8)
            + alice.userSigningKey.rawRepresentation
        let digest = Hex.encode(Array(SHA256.hash(data: input)).prefix(10))
        #expect(alice.fingerprint.replacingOccurrences(of: " ", with: "") == digest)
    }
}
