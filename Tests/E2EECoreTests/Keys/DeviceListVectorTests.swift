@_spi(Vectors) import E2EECore
import E2EETestVectors
import Foundation
import PushTransport
import Testing

/// The `device_lists` and `key_lifecycle` sections of Fixtures/e2ee-vectors.json (docs/PROTOCOL.md §13) against
/// the Swift code: what the fixture says, parsed from the fixture's own text.
@Suite("Device-list vectors (Fixtures/e2ee-vectors.json)")
struct DeviceListVectorTests {
    static func section(_ name: String) throws -> [String: Any] {
        try #require(try ProjectVectorTests.fixture()[name] as? [String: Any], "no \(name) section in the fixture")
    }

    static func entries(_ group: String) throws -> [[String: Any]] {
        try #require(try section("device_lists")[group] as? [[String: Any]], "no device_lists.\(group)")
    }

    static func pins(_ value: Any?) throws(E2EEError) -> DevicePins {
        guard let text = value as? String else { return DevicePins() }
        return try DevicePins.parse(Array(text.utf8))
    }

    @Test(
        "positive lists verify and every listed value matches: list_tbs, signature, digest, fingerprint, certificates"
    )
    func positiveLists() throws {
        let positives = try Self.entries("positive")
        #expect(
            positives.map { $0["name"] as? String } == [
                "alice-v1", "bob-v1", "bob-v2", "bob-v3", "bob-v4", "bob-v2-legacy-push",
            ]
        )
        let generated = ProjectVectors.deviceLists()
        // bob's v2 as earlier releases wrote the phone's push, and the tablet's of a service with no rule here.
        let legacy = try generated.bobV2
            .settingPush(
                PushAddress(
                    APNsAddress(
                        topic: "com.example.e2ee-calls",
                        deviceToken: Hex.encode(ProjectVectors.seed("bob/phone/push"))
                    )
                ),
                deviceID: "phone"
            )
            .settingPush(
                PushAddress(service: PushService(rawValue: "example-push"), address: "opaque:address-1"),
                deviceID: "tablet"
            )
        let expected = [
            "alice-v1": generated.aliceV1, "bob-v1": generated.bobV1, "bob-v2": generated.bobV2,
            "bob-v3": generated.bobV3, "bob-v4": generated.bobV4, "bob-v2-legacy-push": legacy,
        ]
        let legacyText = try #require(positives.last?["json"] as? String)
        #expect(legacyText.contains("\"device_token\"") && legacyText.contains("\"topic\""))
        for vector in positives {
            let name = try #require(vector["name"] as? String)
            let list = try DeviceList.parse(Array(try #require(vector["json"] as? String).utf8))
            #expect(list == expected[name], "\(name)")
            #expect(Hex.encode(list.toBeSigned()) == vector["list_tbs"] as? String, "\(name) list_tbs")
            #expect(Hex.encode(list.signature) == vector["signature"] as? String, "\(name) signature")
            #expect(Hex.encode(list.digest) == vector["digest"] as? String, "\(name) digest")
            #expect(list.fingerprint == vector["fingerprint"] as? String, "\(name) fingerprint")
            let userKey = try SigningPrivateKey(
                seed: SecureBytes(
                    copying: ProjectVectors.seed(try #require(vector["user_signing_key_seed_label"] as? String))
                )
            )
            #expect(list.userSigningKey == userKey.publicKey)
            // Ed25519 is deterministic: the seed re-signs list_tbs to the very same signature, under the label of
            // the list's format (§11.3: version 2 "…/v1", version 3 "…/v3").
            let label = list.formatVersion == 2 ? "e2ee-push/device-list/v1" : "e2ee-push/device-list/v3"
            #expect(list.formatVersion == (name == "bob-v4" ? 3 : 2), "\(name) format")
            #expect(try userKey.signature(for: Array(label.utf8) + [0] + list.toBeSigned()) == list.signature)
            let devices = try #require(vector["devices"] as? [[String: Any]])
            #expect(devices.count == list.devices.count)
            for (device, entry) in zip(list.devices, devices) {
                let message = DeviceList.certificateMessage(
                    userID: list.userID,
                    deviceID: device.deviceID,
                    signingKey: device.signingKey,
                    signedInAtMs: device.signedInAtMs
                )
                #expect(device.deviceID == entry["device_id"] as? String)
                #expect(Hex.encode(message) == entry["certificate_message"] as? String, "\(name)/\(device.deviceID)")
                #expect(Hex.encode(device.certificate) == entry["certificate"] as? String)
                let push = entry["push"] as? [String: String]
                #expect(push?["service"] == device.push?.service.rawValue, "\(name)/\(device.deviceID) push")
                #expect(push?["address"] == device.push?.address, "\(name)/\(device.deviceID) push")
                #expect((entry["push"] is NSNull) == (device.push == nil), "\(name)/\(device.deviceID) push")
                #expect(try userKey.signature(for: message) == device.certificate)
            }
        }
        // The versions only go up, and v3 is v1's device set again under a higher version.
        #expect([generated.bobV1, generated.bobV2, generated.bobV3].map(\.listVersion) == [1, 2, 3])
        #expect(generated.bobV2.devices.map(\.deviceID) == ["phone", "tablet"])
        #expect(generated.bobV3.devices.map(\.deviceID) == ["phone"])
        #expect(generated.bobV3.digest != generated.bobV1.digest)
        // v4: the tablet again, its current key of the X-Wing suite and its old X25519 key in grace; format 3's
        // list_tbs starts 0x00 0x03 and names each key's suite.
        #expect(generated.bobV4.listVersion == 4)
        #expect(generated.bobV4.devices.map(\.deviceID) == ["phone", "tablet"])
        let tablet = try #require(generated.bobV4.device(named: "tablet"))
        #expect(tablet.deviceKeys.map(\.publicKey.suite) == [.classical, .xwing])
        #expect(tablet.currentKey.publicKey.rawRepresentation.count == 1216)
        #expect(Array(generated.bobV4.toBeSigned().prefix(2)) == [0x00, 0x03])
    }

    @Test("pin checks give their outcomes")
    func pinChecks() throws {
        let checks = try Self.entries("pin_checks")
        #expect(checks.count == 9)
        let lists = try Dictionary(
            uniqueKeysWithValues: Self.entries("positive").map { vector in
                (
                    try #require(vector["name"] as? String),
                    try DeviceList.parse(Array(try #require(vector["json"] as? String).utf8))
                )
            }
        )
        var outcomes: [String] = []
        for check in checks {
            let listName = try #require(check["list"] as? String)
            let list = try #require(lists[listName])
            var pins = try Self.pins(check["pins"])
            let outcome = try pins.check(list, nowMs: ProjectVectors.baseTimeMs)
            let text =
                switch outcome {
                case .firstUse: "first-use"
                case .unchanged: "unchanged"
                case .newer: "newer"
                }
            #expect(text == check["expected_outcome"] as? String, "\(check["name"] ?? "?")")
            #expect(pins.pins[list.userID]?.listVersion == list.listVersion)
            outcomes.append(text)
        }
        #expect(Set(outcomes) == ["first-use", "unchanged", "newer"])
    }

    @Test("every negative list fails with its code, and the generator's list of negatives is the fixture's")
    func negativeLists() throws {
        let negatives = try Self.entries("negative")
        let generated = ProjectVectors.negativeLists()
        #expect(negatives.count == 21)
        #expect(negatives.map { $0["name"] as? String } == generated.map(\.name))
        var codes: [String: Int] = [:]
        for vector in negatives {
            let name = try #require(vector["name"] as? String)
            let expected = try #require(vector["expected_error"] as? String)
            let json = Array(try #require(vector["json"] as? String).utf8)
            do {
                let list = try DeviceList.parse(json)
                var pins = try Self.pins(vector["pins"])
                let outcome = try pins.check(list, nowMs: ProjectVectors.baseTimeMs)
                Issue.record("\(name) was accepted (\(outcome)), expected \(expected)")
            } catch {
                #expect(error.code.rawValue == expected, "\(name): got \(error.code) (\(error.message))")
                #expect(!error.message.isEmpty)
            }
            codes[expected, default: 0] += 1
        }
        #expect(
            codes == [
                "bad-list-signature": 2, "device-not-signed-in": 1, "list-rollback": 2, "signing-key-changed": 1,
                "list-version-reused": 1, "key-file": 14,
            ]
        )
    }

    @Test("the tablet's device requests (classical, X-Wing) verify with their proofs; altered, bad-signature")
    func deviceRequests() throws {
        let requests = try Self.entries("device_requests")
        #expect(requests.map { $0["name"] as? String } == ["bob-tablet", "bob-tablet-xwing", "bob-tablet-altered"])
        let lists = ProjectVectors.deviceLists()
        for (good, expected) in zip(requests[0..<2], [lists.tabletRequest, lists.tabletXWingRequest]) {
            let request = try DeviceRequest.parse(Array(try #require(good["json"] as? String).utf8))
            #expect(request == expected)
            #expect(Hex.encode(request.proofMessage()) == good["proof_message"] as? String)
            #expect(Hex.encode(request.proof) == good["proof"] as? String)
            #expect(request.deviceID == "tablet" && request.userID == "bob")
        }
        #expect(lists.tabletRequest.formatVersion == 2 && lists.tabletXWingRequest.formatVersion == 3)
        let altered = requests[2]
        #expect(throws: E2EEError(.badSignature, "")) {
            try DeviceRequest.parse(Array(try #require(altered["json"] as? String).utf8))
        }
        #expect(altered["expected_error"] as? String == "bad-signature")
    }

    @Test("key lifecycle: bob's older key opens before its expires_at_ms, and is unknown-recipient-key at and after it")
    func keyLifecycle() throws {
        let section = try Self.section("key_lifecycle")
        let keys = ProjectVectors.keys()
        let expires = try #require((section["expires_at_ms"] as? NSNumber)?.uint64Value)
        #expect(expires == ProjectVectors.oldKeyExpiresAtMs)
        // The expiry the fixture states is the one bob's published list carries for that key.
        let bobV1 = ProjectVectors.deviceLists().bobV1
        let listed = bobV1.devices[0].deviceKeys.first { $0.keyID.hex == section["recipient_key_id"] as? String }
        #expect(listed?.expiresAtMs == expires)
        #expect(listed?.retiredAtMs != nil)
        let body = Array(try #require(section["body"] as? String).utf8)
        let contacts = try ProjectVectorTests.contactsFromFixture()
        let checks = try #require(section["checks"] as? [[String: Any]])
        #expect(checks.count == 3)
        var opened = 0
        for check in checks {
            let nowMs = try #require((check["now_ms"] as? NSNumber)?.uint64Value)
            let name = try #require(check["name"] as? String)
            do {
                let push = try PushPayload.open(
                    body: body,
                    deviceKey: { keys.recipient.deviceKey(for: $0, nowMs: nowMs) },
                    signingKey: { contacts.signingKey(userID: $0, keyID: $1) }
                )
                #expect(check["expected_error"] is NSNull, "\(name) opened")
                #expect(push.message == ProjectVectors.oldKeyMessage(sender: keys.sender))
                #expect(nowMs < expires)
                opened += 1
            } catch {
                #expect(error.code.rawValue == check["expected_error"] as? String, "\(name): \(error.code)")
                #expect(error.code == .unknownRecipientKey)
                #expect(nowMs >= expires)
            }
        }
        #expect(opened == 1)
    }
}
