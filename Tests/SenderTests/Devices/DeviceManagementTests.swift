@_spi(Vectors) import E2EECore
import Foundation
import Testing

@testable import Sender

/// Signing devices in and out, and rotating keys, as `e2ee-send device …` and `rotate` do them.
@Suite("Device management: add, remove, rotate")
struct DeviceManagementTests {
    @Test("rotate on the managing device: list version + 1, the old key retired now and expiring after the grace")
    func rotateManaging() throws {
        let d = try Devices()
        let now: UInt64 = 1_000_000
        let rotation = try DeviceManagement.rotate(d.phone, list: d.v2, nowMs: now, graceMs: 2 * 3_600_000)
        let list = try #require(rotation.list)
        #expect(rotation.request == nil)
        #expect(list.listVersion == 3)
        let keys = try #require(list.device(named: "phone")).deviceKeys
        #expect(keys.count == 2)
        #expect(keys[0].keyID == rotation.oldKeyID && keys[0].retiredAtMs == now)
        #expect(keys[0].expiresAtMs == now + 2 * 3_600_000)
        #expect(keys[1].keyID == rotation.newKeyID && keys[1].expiresAtMs == nil)
        #expect(list.device(named: "tablet") == d.v2.device(named: "tablet"))
        #expect(list.device(named: "phone")?.push == d.v2.device(named: "phone")?.push)
        #expect(rotation.message.contains("the old key opens pushes until 1970-01-01 02:16:40 UTC (2 h)"))
        // The rotated identity opens the old key until the deadline, not after.
        #expect(rotation.identity.deviceKey(for: rotation.oldKeyID, nowMs: now + 2 * 3_600_000 - 1) != nil)
        #expect(rotation.identity.deviceKey(for: rotation.oldKeyID, nowMs: now + 2 * 3_600_000) == nil)
        // A verified list (what contacts load).
        #expect(try DeviceList.parse(list.jsonData()) == list)
    }

    @Test("rotate with --grace-hours 0 revokes the old key at once and says so")
    func rotateRevokes() throws {
        let d = try Devices()
        let rotation = try DeviceManagement.rotate(d.phone, list: d.v2, nowMs: 5_000, graceMs: 0)
        #expect(rotation.message.hasSuffix("revoked: the old key opens nothing from now on"))
        // Expired at once, the old key is dropped from the identity and from the list.
        #expect(rotation.list?.device(named: "phone")?.deviceKeys.map(\.keyID) == [rotation.newKeyID])
        #expect(rotation.identity.deviceKey(for: rotation.oldKeyID, nowMs: 5_000) == nil)
    }

    @Test("rotate on another device yields a request that device add applies on the managing device")
    func rotateNonManaging() throws {
        let d = try Devices()
        let rotation = try DeviceManagement.rotate(d.tablet, list: d.v2, nowMs: 100, graceMs: 3_600_000)
        #expect(rotation.list == nil)
        let request = try #require(rotation.request)
        #expect(request.deviceID == "tablet")
        #expect(request.push == d.v2.device(named: "tablet")?.push)
        #expect(rotation.message.contains("device add --request"))
        let v3 = try DeviceManagement.add(request, to: d.v2, signer: d.phone, nowMs: 200)
        #expect(v3.listVersion == 3)
        let tablet = try #require(v3.device(named: "tablet"))
        #expect(tablet.currentKey.keyID == rotation.newKeyID)
        // Both sides Optional: comparing a UInt64? with a UInt64 inside #expect made the compiler's AnyHashable thunk
        // read 9 bytes from an 8-byte stack slot (AddressSanitizer: stack-buffer-overflow in the test, not the code).
        let firstExpiry: UInt64? = tablet.deviceKeys.first?.expiresAtMs
        let wantExpiry: UInt64? = 100 + 3_600_000
        #expect(firstExpiry == wantExpiry)
        let signedIn: UInt64? = tablet.signedInAtMs
        #expect(signedIn == d.v2.device(named: "tablet")?.signedInAtMs)
        // A push to the new list opens on the rotated tablet.
        let push = try PushBuilder(identity: d.alice).fanOut(
            .text(TextMessage(threadID: "", title: "", body: "k")),
            to: v3
        )
        let request1 = try push[1].outcome.get().request
        #expect(
            try Devices.open(request1, with: rotation.identity, senders: [try d.alice.card()]).recipientKeyID
                == rotation.newKeyID
        )
    }

    @Test("rotate on the managing device without a list is a usage error")
    func rotateNeedsList() throws {
        let d = try Devices()
        #expect(throws: SenderError(.usage, "")) {
            try DeviceManagement.rotate(d.phone, list: nil, nowMs: 1, graceMs: 0)
        }
    }

    @Test("device add refuses a bad proof, another user's request, another signing key under an existing id")
    func addRefusals() throws {
        let d = try Devices()
        let laptop = try Identity.generate(
            userID: "bob",
            displayName: "B",
            deviceID: "laptop",
            withUserKey: false,
            nowMs: 1
        )
        var forged = try DeviceRequest.make(for: laptop, push: nil, nowMs: 5)
        forged.proof[3] ^= 0x40
        let cases: [(String, DeviceRequest, String)] = [
            ("bad proof", forged, "not signed by that device's key"),
            (
                "another user's request",
                try DeviceRequest.make(
                    for: try Identity.generate(
                        userID: "carol",
                        displayName: "C",
                        deviceID: "laptop",
                        withUserKey: false,
                        nowMs: 1
                    ),
                    push: nil,
                    nowMs: 5
                ),
                "it is for user \"carol\""
            ),
            (
                "another signing key under the id tablet",
                try DeviceRequest.make(
                    for: try Identity.generate(
                        userID: "bob",
                        displayName: "B",
                        deviceID: "tablet",
                        withUserKey: false,
                        nowMs: 1
                    ),
                    push: nil,
                    nowMs: 5
                ),
                "already has a device \"tablet\" with another signing key"
            ),
        ]
        for (name, request, message) in cases {
            do {
                _ = try DeviceManagement.add(request, to: d.v2, signer: d.phone, nowMs: 9)
                Issue.record("\(name): accepted")
            } catch {
                #expect(error.code == .badRequest, "\(name)")
                #expect(error.message.contains(message), "\(name): \(error.message)")
            }
        }
        // Only the device holding the user key signs.
        let request = try DeviceRequest.make(for: laptop, push: nil, nowMs: 5)
        #expect(throws: SenderError(.usage, "")) {
            try DeviceManagement.add(request, to: d.v2, signer: d.tablet, nowMs: 9)
        }
    }

    @Test("device remove refuses the signing device itself and unknown devices")
    func removeRefusals() throws {
        let d = try Devices()
        do {
            _ = try DeviceManagement.remove(deviceID: "phone", from: d.v2, signer: d.phone, nowMs: 9)
            Issue.record("the signing device removed itself")
        } catch {
            #expect(error.code == .usage)
            #expect(error.message.contains("a device cannot remove itself"))
        }
        #expect(throws: SenderError(.usage, "")) {
            try DeviceManagement.remove(deviceID: "watch", from: d.v2, signer: d.phone, nowMs: 9)
        }
    }

    @Test("device list: user, fingerprint, version, one line per device")
    func describe() throws {
        let d = try Devices()
        let lines = DeviceManagement.describe(try d.v2.settingPush(nil, deviceID: "tablet"))
        #expect(lines.count == 6)
        #expect(lines[0] == "user bob (Bob)")
        #expect(lines[1] == "fingerprint \(d.v2.fingerprint)")
        #expect(lines[2] == "list version 2, issued 1970-01-01 00:00:00 UTC")
        #expect(lines[3] == "2 devices:")
        #expect(lines[4].hasPrefix("  phone: signing key \(d.phone.signingKey.publicKey.keyID), signed in "))
        #expect(lines[4].hasSuffix("current key \(d.phone.currentDeviceKey.keyID), push yes"))
        #expect(lines[5].hasSuffix("push no"))
    }
}
