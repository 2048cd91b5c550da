@_spi(Vectors) import E2EECore
import Foundation
import Testing

@testable import Relay

/// Publishing lists (the relay verifies, cannot forge, keeps a pin) and device-signed registrations (signature by
/// the listed device key, timestamp window, one use per nonce).
@Suite("Relay device lists and device-signed registrations")
struct RelayRegistrationTests {
    @Test("the signed registration bytes are docs/RELAY.md's: label v2, service, str16 address, environment or empty")
    func registrationBytes() {
        let nonce = [UInt8](repeating: 9, count: 16)
        let registration = RelayAPI.PushRegistration(
            service: "fcm",
            address: "a/B",
            environment: nil,
            timestampMs: 0x0102_0304_0506_0708,
            nonce: Hex.encode(nonce),
            signature: ""
        )
        let signed = RelayAuthorization.registerMessage(
            userID: "u",
            deviceID: "d",
            registration: registration,
            nonce: nonce
        )
        var expected = Array("e2ee-relay/register-push/v2".utf8) + [0]
        expected += [1] + Array("u".utf8) + [1] + Array("d".utf8) + [3] + Array("fcm".utf8)
        expected += [0, 3] + Array("a/B".utf8) + [0] + [1, 2, 3, 4, 5, 6, 7, 8] + nonce
        #expect(signed == expected)
        var apns = registration
        apns.environment = "development"
        let withEnvironment = RelayAuthorization.registerMessage(
            userID: "u",
            deviceID: "d",
            registration: apns,
            nonce: nonce
        )
        #expect(withEnvironment.count == signed.count + "development".utf8.count)
    }

    @Test("a list is stored once; a newer version replaces it; rollback, reuse and a new user key are refused")
    func publishRules() async throws {
        try await ServiceFixture.with { fixture in
            let bob = try TestUser.make("bob")
            let first = try await fixture.service.publish(userID: "bob", body: bob.list.jsonData())
            #expect(first == .init(listVersion: 2, stored: true))
            let again = try await fixture.service.publish(userID: "bob", body: bob.list.jsonData())
            #expect(again == .init(listVersion: 2, stored: false))

            // Remove the tablet: version 3.
            let v3 = try bob.list.removing(deviceID: "tablet", signer: bob.devices[0], nowMs: 1_800_000_001_000)
            #expect(try await fixture.service.publish(userID: "bob", body: v3.jsonData()).stored)
            #expect(try await fixture.store.devices(userID: "bob").map(\.deviceID) == ["phone"])

            #expect(
                await relayErrorCode { _ = try await fixture.service.publish(userID: "bob", body: bob.list.jsonData()) }
                    == .listRollback
            )
            // Another v3 (the tablet removed at another time: other bytes under the same version).
            let otherV3 = try bob.list.removing(deviceID: "tablet", signer: bob.devices[0], nowMs: 1_800_000_002_000)
            #expect(
                await relayErrorCode { _ = try await fixture.service.publish(userID: "bob", body: otherV3.jsonData()) }
                    == .listVersionReused
            )
            // A new user key for "bob" (someone else's account under the same id).
            let impostor = try TestUser.make("bob", devices: ["phone"])
            #expect(
                await relayErrorCode {
                    _ = try await fixture.service.publish(userID: "bob", body: impostor.list.jsonData())
                } == .signingKeyChanged
            )
            #expect(try await fixture.store.list(userID: "bob")?.listVersion == 3)
        }
    }

    @Test("a list with a device not signed in, a forged signature, or for another user is refused and not stored")
    func forgedLists() async throws {
        try await ServiceFixture.with { fixture in
            let bob = try TestUser.make("bob", devices: ["phone"])
            let mallory = try TestUser.make("mallory", devices: ["ghost"])
            // The relay (or anyone storing lists) adds its own device to bob's list.
            let injected = bob.list.withDevices(bob.list.devices + mallory.list.devices)
            #expect(
                await relayErrorCode { _ = try await fixture.service.publish(userID: "bob", body: injected.jsonData()) }
                    == .badDeviceList
            )
            var tampered = bob.list.jsonData()
            let text = String(decoding: tampered, as: UTF8.self).replacingOccurrences(of: "\"Bob\"", with: "\"B0b\"")
            tampered = Array(text.utf8)
            #expect(
                await relayErrorCode { _ = try await fixture.service.publish(userID: "bob", body: tampered) }
                    == .badDeviceList
            )
            #expect(
                await relayErrorCode {
                    _ = try await fixture.service.publish(userID: "carol", body: bob.list.jsonData())
                }
                    == .userMismatch
            )
            #expect(
                await relayErrorCode { _ = try await fixture.service.publish(userID: "bob", body: Array("{}".utf8)) }
                    == .badDeviceList
            )
            #expect(try await fixture.store.list(userID: "bob") == nil)
            #expect(try await fixture.store.list(userID: "carol") == nil)
        }
    }

    @Test("registration: the listed device key signs it; replayed, stale, forged and unknown-device ones are refused")
    func registration() async throws {
        try await ServiceFixture.with { fixture in
            let bob = try TestUser.make("bob")
            _ = try await fixture.service.publish(userID: "bob", body: bob.list.jsonData())
            let phone = bob.device("phone")
            let now = UInt64(fixture.clock.nowMs)
            func register(_ r: RelayAPI.PushRegistration, device: String = "phone") async -> RelayError.Code? {
                await relayErrorCode {
                    try await fixture.service.registerPush(userID: "bob", deviceID: device, body: RelayRouter.encode(r))
                }
            }
            let good = try RelayAuthorization.signedRegistration(
                userID: "bob",
                deviceID: "phone",
                address: TestUser.address("phone"),
                signingKey: phone.signingKey,
                nowMs: now
            )
            #expect(await register(good) == nil)
            #expect(try await fixture.store.devices(userID: "bob").map(\.pushState) == [.active, .none])
            // The same request again: replay.
            #expect(await register(good) == .replayedAuthorization)
            // Signed by the tablet for the phone.
            let byTablet = try RelayAuthorization.signedRegistration(
                userID: "bob",
                deviceID: "phone",
                address: TestUser.address("phone"),
                signingKey: bob.device("tablet").signingKey,
                nowMs: now
            )
            #expect(await register(byTablet) == .badAuthorization)
            // A token changed after signing.
            var altered = try RelayAuthorization.signedRegistration(
                userID: "bob",
                deviceID: "phone",
                address: TestUser.address("phone"),
                signingKey: phone.signingKey,
                nowMs: now
            )
            altered.address = TestUser.address("evil").push.address
            #expect(await register(altered) == .badAuthorization)
            // Six minutes old.
            let stale = try RelayAuthorization.signedRegistration(
                userID: "bob",
                deviceID: "phone",
                address: TestUser.address("phone"),
                signingKey: phone.signingKey,
                nowMs: now - 360_000
            )
            #expect(await register(stale) == .staleAuthorization)
            // A device that is not in the list, signed by a key the relay never saw.
            let stranger = try Identity.generate(
                userID: "bob",
                displayName: "Bob",
                deviceID: "watch",
                withUserKey: false,
                nowMs: now
            )
            let unknown = try RelayAuthorization.signedRegistration(
                userID: "bob",
                deviceID: "watch",
                address: TestUser.address("watch"),
                signingKey: stranger.signingKey,
                nowMs: now
            )
            #expect(await register(unknown, device: "watch") == .unknownDevice)
            // Bad shapes.
            var shortToken = good
            shortToken.address = "com.example.app/abcd"
            #expect(await register(shortToken) == .badPushAddress)
            var noTopic = good
            noTopic.address = String(good.address.drop { $0 != "/" })
            #expect(await register(noTopic) == .badPushAddress)
            var noEnvironment = good
            noEnvironment.environment = nil
            #expect(await register(noEnvironment) == .badPushAddress)
            var badService = good
            badService.service = "APNs"
            #expect(await register(badService) == .badPushAddress)
            // A service without environments is refused one; a well-formed address of a service this relay has no
            // deliverer for is refused by name, not stored.
            var fcmWithEnvironment = good
            fcmWithEnvironment.service = "fcm"
            #expect(await register(fcmWithEnvironment) == .badPushAddress)
            var fcm = fcmWithEnvironment
            fcm.environment = nil
            #expect(await register(fcm) == .unsupportedPushService)
            var noSignature = good
            noSignature.signature = "00"
            #expect(
                await relayErrorCode {
                    try await fixture.service.registerPush(
                        userID: "bob",
                        deviceID: "phone",
                        body: Array("{\"device_token\":1}".utf8)
                    )
                } == .malformedJSON
            )
            #expect(await register(noSignature) == .badAuthorization)
            // Only the first registration took effect.
            #expect(try await fixture.store.devices(userID: "bob").map(\.pushState) == [.active, .none])
        }
    }

    @Test("delivery tokens: replaced as a set, only hashes stored, a removed token stops working")
    func tokenRotation() async throws {
        try await ServiceFixture.with { fixture in
            let alice = try TestUser.make("alice", devices: ["laptop"])
            let bob = try TestUser.make("bob")
            let old = DeliveryToken()
            try await fixture.enroll(bob, token: old)
            let new = DeliveryToken()
            let set = try RelayAuthorization.signedTokenSet(
                userID: "bob",
                deviceID: "tablet",
                tokens: [new],
                signingKey: bob.device("tablet").signingKey,
                nowMs: UInt64(fixture.clock.nowMs)
            )
            #expect(try await fixture.service.replaceTokens(userID: "bob", body: RelayRouter.encode(set)) == 1)
            #expect(try await fixture.store.isDeliveryToken(new.sha256, of: "bob"))
            #expect(try await fixture.store.isDeliveryToken(old.sha256, of: "bob") == false)
            let body = submitBody([("phone", try bob.sealText(from: alice.devices[0], to: "phone"))])
            #expect(
                await relayErrorCode {
                    _ = try await fixture.service.submit(
                        userID: "bob",
                        authorization: "Bearer \(old.hex)",
                        idempotencyKey: "k1",
                        body: body
                    )
                } == .badDeliveryToken
            )
            let accepted = try await fixture.service.submit(
                userID: "bob",
                authorization: "Bearer \(new.hex)",
                idempotencyKey: "k2",
                body: body
            )
            #expect(accepted.pushes.count == 1)
            // The raw token is nowhere in the database file.
            let file = try Data(contentsOf: URL(fileURLWithPath: fixture.store.path))
            let wal = (try? Data(contentsOf: URL(fileURLWithPath: fixture.store.path + "-wal"))) ?? Data()
            #expect(file.range(of: Data(new.bytes)) == nil)
            #expect(wal.range(of: Data(new.bytes)) == nil)
            #expect(wal.range(of: Data(new.sha256)) != nil || file.range(of: Data(new.sha256)) != nil)
        }
    }

    @Test("a device removed from the list loses its address and its queued pushes; submits to it are refused")
    func removedDevice() async throws {
        try await ServiceFixture.with { fixture in
            let alice = try TestUser.make("alice", devices: ["laptop"])
            let bob = try TestUser.make("bob")
            let token = DeliveryToken()
            try await fixture.enroll(bob, token: token)
            let body = submitBody([("tablet", try bob.sealText(from: alice.devices[0], to: "tablet"))])
            let accepted = try await fixture.service.submit(
                userID: "bob",
                authorization: "Bearer \(token.hex)",
                idempotencyKey: "a",
                body: body
            )
            let v3 = try bob.list.removing(deviceID: "tablet", signer: bob.devices[0], nowMs: 1_800_000_001_000)
            _ = try await fixture.service.publish(userID: "bob", body: v3.jsonData())
            #expect(try await fixture.store.push(accepted.pushes[0].pushID)?.state == .removed)
            #expect(
                await relayErrorCode {
                    _ = try await fixture.service.submit(
                        userID: "bob",
                        authorization: "Bearer \(token.hex)",
                        idempotencyKey: "b",
                        body: body
                    )
                } == .unknownDevice
            )
        }
    }
}
