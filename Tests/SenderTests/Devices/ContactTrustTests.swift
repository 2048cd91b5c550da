@_spi(Vectors) import E2EECore
import Foundation
import Testing

@testable import Sender

/// Pins (docs/PROTOCOL.md §11.5) as a sender meets them: trust on first use with the fingerprint to compare, and
/// each refusal with its code and exit status 76.
@Suite("Contact trust: pins on first use, refusals, explicit acceptance")
struct ContactTrustTests {
    @Test("first use pins the user, says the fingerprint once, and writes the pins file")
    func firstUse() throws {
        let d = try Devices()
        let notices = Notices()
        var trust = try d.trust(notices: notices)
        let list = try trust.list(for: "bob")
        #expect(list.listVersion == 2)
        _ = try trust.list(for: "bob")
        _ = try trust.list(for: d.folder + "/bob.card.json")
        #expect(
            notices.all == [
                "e2ee-send: pinned bob on first use: fingerprint \(d.v2.fingerprint); compare it with bob"
            ]
        )
        let saved = try DevicePins.load(path: d.folder + "/pins.json")
        #expect(saved.pins["bob"]?.listVersion == 2)
        #expect(saved.pins["bob"]?.userSigningKey == d.v2.userSigningKey)
        // A later run: no notice, and an unchanged pin is not written again (the file keeps its compact form).
        let path = d.folder + "/pins.json"
        let compact = try JSONSerialization.data(
            withJSONObject: try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
        )
        try compact.write(to: URL(fileURLWithPath: path))
        var again = try d.trust(notices: notices)
        #expect(try again.list(for: "bob").listVersion == 2)
        #expect(notices.all.count == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == compact)
    }

    @Test("a newer list moves the pin and is saved")
    func newerList() throws {
        let d = try Devices()
        try d.publish(d.v1)
        var first = try d.trust()
        #expect(try first.list(for: "bob").listVersion == 1)
        try d.publish(d.v2)
        var second = try d.trust()
        #expect(try second.list(for: "bob").listVersion == 2)
        #expect(try DevicePins.load(path: d.folder + "/pins.json").pins["bob"]?.listVersion == 2)
    }

    /// Pins bob at `pinned`, then publishes `served` and asks again.
    static func refusal(pinned: DeviceList, served: DeviceList, d: Devices) throws -> SenderError? {
        try d.publish(pinned)
        var trust = try d.trust()
        _ = try trust.list(for: "bob")
        try d.publish(served)
        var later = try d.trust()
        do {
            _ = try later.list(for: "bob")
            return nil
        } catch {
            return error
        }
    }

    @Test("a forged list signature: bad-list-signature, exit 76")
    func forgedSignature() throws {
        let d = try Devices()
        var signature = d.v2.signature
        signature[0] ^= 1
        let forged = DeviceList.unchecked(
            userID: "bob",
            displayName: d.v2.displayName,
            userSigningKey: d.v2.userSigningKey,
            listVersion: 3,
            issuedAtMs: d.v2.issuedAtMs,
            devices: d.v2.devices,
            signature: signature
        )
        let error = try #require(try Self.refusal(pinned: d.v2, served: forged, d: d))
        #expect(error.code == .badListSignature)
        #expect(SenderError.Code.listRefusals.contains(error.code))
        #expect(error.message.contains("get a fresh card from bob"))
    }

    @Test("an injected device (signed in by another user key): device-not-signed-in, exit 76, even on first use")
    func injectedDevice() throws {
        let d = try Devices()
        let mallory = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "ghost", nowMs: 1)
        let ghost = try mallory.card(
            push: PushAddress(APNsAddress(topic: "t", deviceToken: String(repeating: "ee", count: 32)))
        )
        let injected = d.v2.withDevices(d.v2.devices + ghost.devices, listVersion: 3)
        try d.publish(injected)
        var trust = try d.trust()
        #expect(throws: SenderError(.deviceNotSignedIn, "")) { try trust.list(for: "bob") }
        // Nothing was pinned from a list that does not verify.
        #expect(trust.pins.pins["bob"] == nil)
        #expect(SenderError.Code.listRefusals.contains(.deviceNotSignedIn))
    }

    @Test("an older list than the pinned one: list-rollback, exit 76")
    func rollback() throws {
        let d = try Devices()
        let error = try #require(try Self.refusal(pinned: d.v2, served: d.v1, d: d))
        #expect(error.code == .listRollback)
        #expect(SenderError.Code.listRefusals.contains(error.code))
        #expect(error.message.contains("version 1, older than version 2"))
    }

    @Test("another list under the pinned version: list-version-reused, exit 76")
    func versionReused() throws {
        let d = try Devices()
        let laptop = try Identity.generate(
            userID: "bob",
            displayName: "Bob",
            deviceID: "laptop",
            withUserKey: false,
            nowMs: 1
        )
        let other = try DeviceManagement.add(
            try DeviceRequest.make(for: laptop, push: nil, nowMs: 40),
            to: d.v1,
            signer: d.phone,
            nowMs: 40
        )
        #expect(other.listVersion == d.v2.listVersion)
        let error = try #require(try Self.refusal(pinned: d.v2, served: other, d: d))
        #expect(error.code == .listVersionReused)
        #expect(SenderError.Code.listRefusals.contains(error.code))
    }

    @Test("a changed user key: signing-key-changed until accepted, then the new list is used")
    func changedKey() throws {
        let d = try Devices()
        let newPhone = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: 50)
        let reinstalled = try newPhone.card(
            push: PushAddress(APNsAddress(topic: Devices.topic, deviceToken: Devices.phoneToken))
        )
        let error = try #require(try Self.refusal(pinned: d.v2, served: reinstalled, d: d))
        #expect(error.code == .signingKeyChanged)
        #expect(SenderError.Code.listRefusals.contains(error.code))
        #expect(error.message.contains("e2ee-send contact accept"))
        #expect(error.message.contains(reinstalled.fingerprint) && error.message.contains(d.v2.fingerprint))
        var trust = try d.trust()
        let previous = try trust.accept(reinstalled)
        #expect(previous == d.v2.fingerprint)
        var after = try d.trust()
        #expect(try after.list(for: "bob") == reinstalled)
    }

    @Test("contact accept takes a changed key only: an old list under the pinned key is still a rollback")
    func acceptRefusesRollback() throws {
        let d = try Devices()
        var trust = try d.trust()
        _ = try trust.list(for: "bob")
        #expect(throws: SenderError(.listRollback, "")) { try trust.accept(d.v1) }
        #expect(trust.pins.pins["bob"]?.listVersion == 2)
        #expect(try trust.accept(d.v2) == d.v2.fingerprint)
    }

    @Test("a recipient is decided once per run (a batch treats every line alike); bad pins are unreadable-pins")
    func decidedOnceAndBadPins() throws {
        let d = try Devices()
        var trust = try d.trust()
        _ = try trust.list(for: "bob")
        try d.publish(d.v1)
        var run = try d.trust()
        #expect(throws: SenderError(.listRollback, "")) { try run.list(for: "bob") }
        try d.publish(d.v2)
        #expect(throws: SenderError(.listRollback, "")) { try run.list(for: "bob") }
        var next = try d.trust()
        #expect(try next.list(for: "bob").listVersion == 2)
        try Data("not json".utf8).write(to: URL(fileURLWithPath: d.folder + "/pins.json"))
        #expect(throws: SenderError(.unreadablePins, "")) { try d.trust() }
    }

    @Test("a fetched list (a relay's) of another user is user-id-mismatch; an accepted one becomes the folder's card")
    func fetchedLists() async throws {
        let d = try Devices()
        // v1 in the folder, v2 fetched: the pin moves to v2 and the card follows, so the next send that reads the
        // card does not refuse it as a rollback.
        try d.publish(d.v1)
        let notices = Notices()
        var trust = try d.trust(notices: notices)
        #expect(try trust.list(for: "bob").listVersion == 1)
        var fetched = try d.trust(notices: notices)
        let v2 = d.v2
        #expect(try await fetched.list(for: "bob", fetchedBy: { () async throws(SenderError) in v2 }) == d.v2)
        #expect(try DeviceList.load(path: d.folder + "/bob.card.json") == d.v2)
        var later = try d.trust()
        #expect(try later.list(for: "bob") == d.v2)
        #expect(notices.all.contains { $0.contains("saved bob's device list version 2") })

        // alice's valid list served for bob: refused, nothing pinned, the card left alone.
        let alice = try d.alice.card(push: nil)
        var swapped = try d.trust()
        await #expect(throws: SenderError(.userIDMismatch, "")) {
            try await swapped.list(for: "bob", fetchedBy: { () async throws(SenderError) in alice })
        }
        #expect(try DevicePins.load(path: d.folder + "/pins.json").pins["alice"] == nil)
        #expect(try DeviceList.load(path: d.folder + "/bob.card.json") == d.v2)
        #expect(SenderError.Code.listRefusals.contains(.userIDMismatch))
    }

    @Test("a refusal of a list has one code per fault, whatever its source")
    func refusalCodes() {
        let cases: [(E2EEError.Code, SenderError.Code)] = [
            (.keyFile, .malformedList), (.invalidKey, .malformedList), (.deviceNotSignedIn, .deviceNotSignedIn),
            (.badListSignature, .badListSignature), (.userIDMismatch, .userIDMismatch),
        ]
        for source in ["the card", "the relay's list"] {
            for (error, code) in cases {
                let refused = ContactDirectory.refusal(E2EEError(error, "x"), of: "bob", source: source)
                #expect(refused.code == code, "\(source) \(error)")
                #expect(refused.message.contains(source))
            }
        }
        #expect(!SenderError.Code.listRefusals.contains(.malformedList))
    }
}
