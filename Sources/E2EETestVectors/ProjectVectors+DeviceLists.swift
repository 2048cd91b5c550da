@_spi(Vectors) public import E2EECore
import Foundation

/// The device-list vectors (`device_lists` in Fixtures/e2ee-vectors.json, docs/PROTOCOL.md §11 and §13): alice's
/// and bob's signed lists, bob's tablet's device request, and lists every reader must refuse, each with the pins to
/// check it against and the code it fails with.
extension ProjectVectors {
    /// When the lists were signed: v1 an hour before ``baseTimeMs``, the tablet signed in half an hour before, the
    /// tablet removed ten minutes before.
    public static let listV1AtMs = baseTimeMs - 3_600_000
    public static let listV2AtMs = baseTimeMs - 1_800_000
    public static let listV3AtMs = baseTimeMs - 600_000
    /// The tablet moved to the X-Wing suite and signed in again five minutes before ``baseTimeMs`` (list v4).
    public static let listV4AtMs = baseTimeMs - 300_000

    /// `"e2ee-push/device-list/v1" || 0x00` (§11.3), written here from the spec to sign forged lists.
    static let listSignatureLabel: [UInt8] = Array("e2ee-push/device-list/v1".utf8) + [0]

    /// A push address of the vectors (unsigned, §11.1): 32 bytes from the seed rule as the token.
    static func push(_ label: String) -> PushAddress {
        PushAddress(APNsAddress(topic: vectorTopic, deviceToken: Hex.encode(seed(label))))
    }

    static func signingKey(_ label: String) -> SigningPrivateKey {
        try! SigningPrivateKey(seed: SecureBytes(copying: seed(label)))
    }

    static func deviceKey(_ label: String) -> DevicePrivateKey {
        try! DevicePrivateKey(suite: .classical, secret: SecureBytes(copying: seed(label)))
    }

    /// An X-Wing device key: its 32-byte seed is the seed rule's bytes for `label`.
    static func xwingDeviceKey(_ label: String) -> DevicePrivateKey {
        try! DevicePrivateKey(suite: .xwing, secret: SecureBytes(copying: seed(label)))
    }

    /// Bob's tablet after its move to the X-Wing suite (a rotation at ``listV4AtMs`` with the default grace): the
    /// X25519 key `bob/tablet/device-key` retired, the X-Wing key `bob/tablet/xwing-device-key` current.
    public static func bobTabletXWing() -> Identity {
        try! Identity(
            userID: "bob",
            displayName: "Bob",
            deviceID: "tablet",
            signingKey: signingKey("bob/tablet/signing-key"),
            userSigningKey: nil,
            deviceKeys: [
                (
                    deviceKey("bob/tablet/device-key"), listV2AtMs, listV4AtMs,
                    listV4AtMs + Identity.defaultGracePeriodMs
                ),
                (xwingDeviceKey("bob/tablet/xwing-device-key"), listV4AtMs, nil, nil),
            ]
        )
    }

    /// Bob's second device: signing key `bob/tablet/signing-key`, device key `bob/tablet/device-key`, no user key.
    public static func bobTablet() -> Identity {
        try! Identity(
            userID: "bob",
            displayName: "Bob",
            deviceID: "tablet",
            signingKey: signingKey("bob/tablet/signing-key"),
            userSigningKey: nil,
            deviceKeys: [(deviceKey("bob/tablet/device-key"), listV2AtMs, nil, nil)]
        )
    }

    /// The positive lists and the tablet's request.
    public struct DeviceListSet: Sendable {
        public let aliceV1: DeviceList
        public let bobV1: DeviceList
        /// Bob's phone and tablet.
        public let bobV2: DeviceList
        /// The tablet removed.
        public let bobV3: DeviceList
        /// The tablet signed in again with its X-Wing key (format 3: both suites in one list).
        public let bobV4: DeviceList
        public let tabletRequest: DeviceRequest
        /// The X-Wing tablet's request (format 3).
        public let tabletXWingRequest: DeviceRequest
    }

    public static func deviceLists() -> DeviceListSet {
        let keys = keys()
        let bob = keys.recipient
        let bobV1 = try! deviceList(of: bob).settingPush(push("bob/phone/push"), deviceID: "phone")
        let request = try! DeviceRequest.make(for: bobTablet(), push: push("bob/tablet/push"), nowMs: listV2AtMs)
        let bobV2 = try! bobV1.signingIn(request, signer: bob, nowMs: listV2AtMs)
        let bobV3 = try! bobV2.removing(deviceID: "tablet", signer: bob, nowMs: listV3AtMs)
        let xwingRequest = try! DeviceRequest.make(
            for: bobTabletXWing(),
            push: push("bob/tablet/push"),
            nowMs: listV4AtMs
        )
        let bobV4 = try! bobV3.signingIn(xwingRequest, signer: bob, nowMs: listV4AtMs)
        return DeviceListSet(
            aliceV1: deviceList(of: keys.sender),
            bobV1: bobV1,
            bobV2: bobV2,
            bobV3: bobV3,
            bobV4: bobV4,
            tabletRequest: request,
            tabletXWingRequest: xwingRequest
        )
    }

    /// The pins file of a sender that accepted `list` (§11.5), as JSON text.
    public static func pinsFile(accepting list: DeviceList) -> String {
        var pins = DevicePins()
        _ = try! pins.check(list, nowMs: baseTimeMs)
        return String(decoding: pins.jsonData(), as: UTF8.self)
    }

    /// `list` with every certificate and the list signature made by `userKey` (a list that is validly signed
    /// whatever else is wrong with it).
    static func resigned(_ list: DeviceList, by userKey: SigningPrivateKey) -> DeviceList {
        var devices = list.devices
        for index in devices.indices {
            devices[index].certificate = try! userKey.signature(
                for: DeviceList.certificateMessage(
                    userID: list.userID,
                    deviceID: devices[index].deviceID,
                    signingKey: devices[index].signingKey,
                    signedInAtMs: devices[index].signedInAtMs
                )
            )
        }
        return signedOnly(list, devices: devices, by: userKey)
    }

    /// `list` with `devices` and a list signature by `userKey`, certificates as given.
    static func signedOnly(
        _ list: DeviceList,
        devices: [DeviceList.Device],
        by userKey: SigningPrivateKey
    )
        -> DeviceList
    {
        func make(_ signature: [UInt8]) -> DeviceList {
            DeviceList.unchecked(
                userID: list.userID,
                displayName: list.displayName,
                userSigningKey: userKey.publicKey,
                listVersion: list.listVersion,
                issuedAtMs: list.issuedAtMs,
                devices: devices,
                signature: signature
            )
        }
        return make(try! userKey.signature(for: listSignatureLabel + make([]).toBeSigned()))
    }

    /// A list's JSON edited as a dictionary (for malformed lists the encoder would never write).
    static func editedJSON(_ list: DeviceList, _ edit: (inout [String: Any]) -> Void) -> String {
        var object = try! JSONSerialization.jsonObject(with: Data(list.jsonData())) as! [String: Any]
        edit(&object)
        return jsonText(object)
    }

    static func jsonText(_ object: Any) -> String {
        let data = try! JSONSerialization.data(
            withJSONObject: object,
            options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        )
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// A list every reader refuses: its JSON, the pins file to check it against (nil: no pin) and the code.
    public struct NegativeList: Sendable {
        public let name: String
        public let what: String
        public let json: String
        public let pins: String?
        public let expected: E2EEError.Code
    }

    // swift-format-ignore: FunctionBodyLength
    public static func negativeLists() -> [NegativeList] {
        let keys = keys()
        let lists = deviceLists()
        let bobUserKey = signingKey("bob/user-key")
        let malloryUserKey = signingKey("mallory/user-key")
        let tablet = bobTablet()
        var negatives: [NegativeList] = []
        func add(_ name: String, _ what: String, _ json: String, pins: DeviceList?, _ code: E2EEError.Code) {
            negatives.append(
                NegativeList(name: name, what: what, json: json, pins: pins.map(pinsFile(accepting:)), expected: code)
            )
        }
        func text(_ list: DeviceList) -> String { String(decoding: list.jsonData(), as: UTF8.self) }

        // Signatures and certificates (§11.4).
        let forged = lists.bobV2.replacingSignature(
            with: try! malloryUserKey.signature(for: listSignatureLabel + lists.bobV2.toBeSigned())
        )
        add(
            "forged-list-signature",
            "bob's v2 with its list signature made by another key (mallory/user-key) over the same list_tbs",
            text(forged),
            pins: lists.bobV1,
            .badListSignature
        )
        var ghost = keys.stranger.listedDevice(
            as: "laptop",
            signedInAtMs: listV2AtMs,
            certifiedBy: malloryUserKey,
            user: "bob"
        )
        ghost.push = push("mallory/push")
        add(
            "extra-device-not-signed-in",
            "bob's v1 with a device \"laptop\" appended by whoever serves the list (certified by mallory/user-key), v1's signature kept",
            text(lists.bobV1.withDevices(lists.bobV1.devices + [ghost])),
            pins: lists.bobV1,
            .deviceNotSignedIn
        )
        add(
            "device-removed-without-resigning",
            "bob's v2 with the tablet deleted from devices, v2's signature kept",
            text(lists.bobV2.withDevices([lists.bobV2.devices[0]])),
            pins: lists.bobV1,
            .badListSignature
        )

        // Pins (§11.5).
        add(
            "rollback",
            "bob's v2, validly signed, to a sender that pinned v3",
            text(lists.bobV2),
            pins: lists.bobV3,
            .listRollback
        )
        let otherKey = try! DeviceList.signedForVectors(
            userID: "bob",
            displayName: "Bob",
            userKey: malloryUserKey,
            listVersion: 4,
            issuedAtMs: baseTimeMs,
            devices: [(try! keys.stranger.renamed(userID: "bob", deviceID: "phone"), baseTimeMs, nil)]
        )
        add(
            "signing-key-changed",
            "a list for bob, version 4, validly signed by another user key (mallory/user-key), to a sender that pinned bob's v3",
            text(otherKey),
            pins: lists.bobV3,
            .signingKeyChanged
        )
        let reused = try! DeviceList.signedForVectors(
            userID: "bob",
            displayName: "Bob",
            userKey: bobUserKey,
            listVersion: 3,
            issuedAtMs: listV3AtMs,
            devices: [(keys.recipient, listV1AtMs, nil), (tablet, listV2AtMs, nil)]
        )
        add(
            "list-version-reused",
            "a second version 3 of bob's list, validly signed by bob/user-key, still listing the tablet, to a sender that pinned the real v3",
            text(reused),
            pins: lists.bobV3,
            .listVersionReused
        )

        // Well-formedness (§11.1), each breaking one rule of an otherwise validly signed list.
        add(
            "key-id-mismatch",
            "bob's v1 with the current device key's key_id replaced by another key's id",
            editedJSON(lists.bobV1) { object in
                var devices = object["devices"] as! [[String: Any]]
                var deviceKeys = devices[0]["device_keys"] as! [[String: Any]]
                deviceKeys[1]["key_id"] = keys.stranger.currentDeviceKey.keyID.hex
                devices[0]["device_keys"] = deviceKeys
                object["devices"] = devices
            },
            pins: nil,
            .keyFile
        )
        let bob = keys.recipient
        let card: [String: Any] = [
            "version": 1,
            "user_id": bob.userID,
            "display_name": bob.displayName,
            "signing_key": Hex.encode(bob.signingKey.publicKey.rawRepresentation),
            "signing_key_id": bob.signingKey.publicKey.keyID.hex,
            "device_keys": bob.publishedDeviceKeys.map { key -> [String: Any] in
                var entry: [String: Any] = [
                    "key_id": key.keyID.hex, "public_key": Hex.encode(key.publicKey.rawRepresentation),
                    "created_at_ms": key.createdAtMs,
                ]
                if let retired = key.retiredAtMs { entry["retired_at_ms"] = retired }
                return entry
            },
        ]
        add(
            "contact-card-v1",
            "a single-device contact card of an earlier release (version 1, no format)",
            jsonText(card),
            pins: nil,
            .keyFile
        )
        add(
            "format-version-4",
            "bob's v1 with \"version\": 4",
            editedJSON(lists.bobV1) { $0["version"] = 4 },
            pins: nil,
            .keyFile
        )
        add(
            "format-version-2-with-xwing-key",
            "bob's v4 (an X-Wing key) with \"version\": 2, signature kept",
            editedJSON(lists.bobV4) { $0["version"] = 2 },
            pins: nil,
            .keyFile
        )
        add(
            "xwing-key-as-classical",
            "bob's v4 with the tablet's X-Wing key entry's \"suite\" removed (read as suite 1: 1,216 bytes is no X25519 key)",
            editedJSON(lists.bobV4) { object in
                var devices = object["devices"] as! [[String: Any]]
                var keys = devices[1]["device_keys"] as! [[String: Any]]
                keys[1]["suite"] = nil
                devices[1]["device_keys"] = keys
                object["devices"] = devices
            },
            pins: nil,
            .keyFile
        )
        add(
            "rollback-to-classical-list",
            "bob's v3 (format 2: the tablet absent, every key X25519), pinned bob's v4 (the X-Wing tablet)",
            text(lists.bobV3),
            pins: lists.bobV4,
            .listRollback
        )
        var duplicate = lists.bobV2.devices
        duplicate[1].deviceID = "phone"
        add(
            "duplicate-device-id",
            "bob's v2 with the tablet also named \"phone\", re-signed by bob/user-key",
            text(resigned(lists.bobV2.withDevices(duplicate), by: bobUserKey)),
            pins: nil,
            .keyFile
        )
        var twoCurrent = lists.bobV1.devices
        twoCurrent[0].deviceKeys[0].retiredAtMs = nil
        twoCurrent[0].deviceKeys[0].expiresAtMs = nil
        add(
            "two-current-keys",
            "bob's v1 with the old device key's retired_at_ms and expires_at_ms removed, re-signed",
            text(signedOnly(lists.bobV1, devices: twoCurrent, by: bobUserKey)),
            pins: nil,
            .keyFile
        )
        var noExpiry = lists.bobV1.devices
        noExpiry[0].deviceKeys[0].expiresAtMs = nil
        add(
            "retired-key-without-expiry",
            "bob's v1 with the retired device key's expires_at_ms removed, re-signed",
            text(signedOnly(lists.bobV1, devices: noExpiry, by: bobUserKey)),
            pins: nil,
            .keyFile
        )
        var currentExpires = lists.bobV1.devices
        currentExpires[0].deviceKeys[1].expiresAtMs = baseTimeMs
        add(
            "current-key-with-expiry",
            "bob's v1 with expires_at_ms on the current device key, re-signed",
            text(signedOnly(lists.bobV1, devices: currentExpires, by: bobUserKey)),
            pins: nil,
            .keyFile
        )
        let seventeen = (1...17).map { n in
            let label = "bob/device-\(n)"
            let identity = try! Identity(
                userID: "bob",
                displayName: "Bob",
                deviceID: "device-\(n)",
                signingKey: signingKey("\(label)/signing-key"),
                deviceKeys: [(deviceKey("\(label)/device-key"), listV2AtMs, nil, nil)]
            )
            return identity.listedDevice(
                as: identity.deviceID,
                signedInAtMs: listV2AtMs,
                certifiedBy: bobUserKey,
                user: "bob"
            )
        }
        add(
            "seventeen-devices",
            "a list of bob with 17 devices (device-1 ... device-17), each signed in, the list signed by bob/user-key",
            text(signedOnly(lists.bobV2, devices: seventeen, by: bobUserKey)),
            pins: nil,
            .keyFile
        )

        // Push addresses (§11.1): unsigned, so these keep v2's valid signature; each breaks one rule.
        let phoneToken = Hex.encode(seed("bob/phone/push"))
        add(
            "push-both-forms",
            "bob's v2 with the phone's push holding the current service/address and the legacy device_token",
            pushEdited(
                lists.bobV2,
                device: 0,
                [
                    "service": "apns", "address": "\(vectorTopic)/\(phoneToken)", "device_token": phoneToken,
                ]
            ),
            pins: nil,
            .keyFile
        )
        add(
            "push-service-uppercase",
            "bob's v2 with the phone's push service \"APNS\" (a service name is a-z, 0-9 and '-')",
            pushEdited(lists.bobV2, device: 0, ["service": "APNS", "address": "\(vectorTopic)/\(phoneToken)"]),
            pins: nil,
            .keyFile
        )
        add(
            "push-apns-short-token",
            "bob's v2 with the phone's apns address carrying a device token of 62 hex digits",
            pushEdited(
                lists.bobV2,
                device: 0,
                [
                    "service": "apns", "address": "\(vectorTopic)/\(phoneToken.prefix(62))",
                ]
            ),
            pins: nil,
            .keyFile
        )
        add(
            "push-legacy-without-topic",
            "bob's v2 with the phone's push in the legacy form without its topic",
            pushEdited(lists.bobV2, device: 0, ["device_token": phoneToken]),
            pins: nil,
            .keyFile
        )
        return negatives
    }

    /// The topic of the vectors' APNs addresses.
    static let vectorTopic = "com.example.e2ee-calls"

    /// `list`'s JSON with the `push` of its device at `device` replaced by `push` (not a signed field: the list's
    /// signature still verifies).
    static func pushEdited(_ list: DeviceList, device: Int, _ push: [String: Any]) -> String {
        editedJSON(list) { object in
            var devices = object["devices"] as! [[String: Any]]
            devices[device]["push"] = push
            object["devices"] = devices
        }
    }

    /// bob's v2 with its phone's push in the legacy form `{device_token, topic}` and its tablet's of a service this
    /// implementation has no rule for (`example-push`, kept as is): readers MUST accept it as bob's v2, with these
    /// addresses (§11.1). The same signed bytes, so the same digest.
    public static func legacyPushList() -> (json: String, list: DeviceList) {
        let text = editedJSON(deviceLists().bobV2) { object in
            var devices = object["devices"] as! [[String: Any]]
            devices[0]["push"] = ["device_token": Hex.encode(seed("bob/phone/push")), "topic": vectorTopic]
            devices[1]["push"] = ["service": "example-push", "address": "opaque:address-1"]
            object["devices"] = devices
        }
        return (text, try! DeviceList.parse(Array(text.utf8)))
    }

    /// The request vectors: the tablet's request, and one altered after it was made.
    public static func alteredRequest() -> String {
        var object =
            try! JSONSerialization.jsonObject(with: Data(deviceLists().tabletRequest.jsonData())) as! [String: Any]
        object["device_id"] = "laptop"
        return jsonText(object)
    }

    /// The `device_lists` section of the vector file.
    static func deviceListSection() -> [String: Any] {
        let lists = deviceLists()
        func positive(
            _ name: String,
            _ list: DeviceList,
            userKeyLabel: String,
            deviceLabels: [String: [String]]
        )
            -> [String: Any]
        {
            [
                "name": name,
                "json": String(decoding: list.jsonData(), as: UTF8.self),
                "user_id": list.userID,
                "user_signing_key_seed_label": userKeyLabel,
                "list_version": list.listVersion,
                "list_tbs": Hex.encode(list.toBeSigned()),
                "signature": Hex.encode(list.signature),
                "digest": Hex.encode(list.digest),
                "fingerprint": list.fingerprint,
                "devices": list.devices.map { device -> [String: Any] in
                    let labels = deviceLabels[device.deviceID]!
                    return [
                        "device_id": device.deviceID,
                        "signing_key_seed_label": labels[0],
                        "device_key_seed_labels": Array(labels.dropFirst()),
                        "certificate_message": Hex.encode(
                            DeviceList.certificateMessage(
                                userID: list.userID,
                                deviceID: device.deviceID,
                                signingKey: device.signingKey,
                                signedInAtMs: device.signedInAtMs
                            )
                        ),
                        "certificate": Hex.encode(device.certificate),
                        "push": device.push.map { ["service": $0.service.rawValue, "address": $0.address] as Any }
                            ?? NSNull(),
                    ]
                },
            ]
        }
        func positive(legacy: (json: String, list: DeviceList), labels: [String: [String]]) -> [String: Any] {
            var entry = positive("bob-v2-legacy-push", legacy.list, userKeyLabel: "bob/user-key", deviceLabels: labels)
            entry["json"] = legacy.json
            return entry
        }
        let bobLabels = [
            "phone": ["bob/signing-key", "bob/device-key-old", "bob/device-key"],
            "tablet": ["bob/tablet/signing-key", "bob/tablet/device-key"],
        ]
        var bobV4Labels = bobLabels
        bobV4Labels["tablet"] = ["bob/tablet/signing-key", "bob/tablet/device-key", "bob/tablet/xwing-device-key"]
        let positives = [
            positive(
                "alice-v1",
                lists.aliceV1,
                userKeyLabel: "alice/user-key",
                deviceLabels: ["phone": ["alice/signing-key", "alice/device-key"]]
            ),
            positive("bob-v1", lists.bobV1, userKeyLabel: "bob/user-key", deviceLabels: bobLabels),
            positive("bob-v2", lists.bobV2, userKeyLabel: "bob/user-key", deviceLabels: bobLabels),
            positive("bob-v3", lists.bobV3, userKeyLabel: "bob/user-key", deviceLabels: bobLabels),
            positive("bob-v4", lists.bobV4, userKeyLabel: "bob/user-key", deviceLabels: bobV4Labels),
            positive(legacy: legacyPushList(), labels: bobLabels),
        ]
        let accepted: [(String, String, DeviceList?, String)] = [
            ("alice-v1-first-use", "alice-v1", nil, "first-use"),
            ("bob-v1-unchanged", "bob-v1", lists.bobV1, "unchanged"),
            ("bob-v2-after-v1", "bob-v2", lists.bobV1, "newer"),
            ("bob-v3-after-v2", "bob-v3", lists.bobV2, "newer"),
            ("bob-v3-after-v1", "bob-v3", lists.bobV1, "newer"),
            ("bob-v3-unchanged", "bob-v3", lists.bobV3, "unchanged"),
            ("bob-v4-after-v3", "bob-v4", lists.bobV3, "newer"),
            ("bob-v4-unchanged", "bob-v4", lists.bobV4, "unchanged"),
            ("bob-v2-legacy-push-after-v2", "bob-v2-legacy-push", lists.bobV2, "unchanged"),
        ]
        let request = lists.tabletRequest
        let xwingRequest = lists.tabletXWingRequest
        return [
            "positive": positives,
            "pin_checks": accepted.map { check -> [String: Any] in
                [
                    "name": check.0, "list": check.1,
                    "pins": check.2.map { pinsFile(accepting: $0) as Any } ?? NSNull(),
                    "expected_outcome": check.3,
                ]
            },
            "negative": negativeLists().map { n -> [String: Any] in
                [
                    "name": n.name, "what": n.what, "json": n.json, "pins": n.pins.map { $0 as Any } ?? NSNull(),
                    "expected_error": n.expected.rawValue,
                ]
            },
            "device_requests": [
                [
                    "name": "bob-tablet",
                    "json": String(decoding: request.jsonData(), as: UTF8.self),
                    "signing_key_seed_label": "bob/tablet/signing-key",
                    "device_key_seed_labels": ["bob/tablet/device-key"],
                    "proof_message": Hex.encode(request.proofMessage()),
                    "proof": Hex.encode(request.proof),
                    "expected_error": NSNull(),
                ],
                [
                    "name": "bob-tablet-xwing",
                    "json": String(decoding: xwingRequest.jsonData(), as: UTF8.self),
                    "signing_key_seed_label": "bob/tablet/signing-key",
                    "device_key_seed_labels": ["bob/tablet/device-key", "bob/tablet/xwing-device-key"],
                    "proof_message": Hex.encode(xwingRequest.proofMessage()),
                    "proof": Hex.encode(xwingRequest.proof),
                    "expected_error": NSNull(),
                ],
                [
                    "name": "bob-tablet-altered",
                    "json": alteredRequest(),
                    "what": "the tablet's request with device_id changed to \"laptop\" after the proof was made",
                    "expected_error": E2EEError.Code.badSignature.rawValue,
                ],
            ],
        ]
    }
}

extension DeviceList {
    /// This list with another signature (a forged list).
    fileprivate func replacingSignature(with signature: [UInt8]) -> DeviceList {
        DeviceList.unchecked(
            userID: self.userID,
            displayName: self.displayName,
            userSigningKey: self.userSigningKey,
            listVersion: self.listVersion,
            issuedAtMs: self.issuedAtMs,
            devices: self.devices,
            signature: signature
        )
    }
}

extension Identity {
    /// This identity's device as a list entry of `user`, certified by `userKey`.
    fileprivate func listedDevice(
        as deviceID: String,
        signedInAtMs: UInt64,
        certifiedBy userKey: SigningPrivateKey,
        user: String
    ) -> DeviceList.Device {
        let list = try! DeviceList.signedForVectors(
            userID: user,
            displayName: "",
            userKey: userKey,
            listVersion: 1,
            issuedAtMs: signedInAtMs,
            devices: [(try! self.renamed(userID: user, deviceID: deviceID), signedInAtMs, nil)]
        )
        return list.devices[0]
    }

    /// The same keys under another user id and device id.
    fileprivate func renamed(userID: String, deviceID: String) throws(E2EEError) -> Identity {
        try Identity(
            userID: userID,
            displayName: self.displayName,
            deviceID: deviceID,
            signingKey: self.signingKey,
            userSigningKey: self.userSigningKey,
            deviceKeys: self.deviceKeys.map {
                (
                    key: $0.privateKey, createdAtMs: $0.createdAtMs, retiredAtMs: $0.retiredAtMs,
                    expiresAtMs: $0.expiresAtMs
                )
            }
        )
    }
}
