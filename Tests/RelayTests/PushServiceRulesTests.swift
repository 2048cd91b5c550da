import E2EECore
import Foundation
import PushTransport
import RelayClient
import Testing

@testable import Relay

/// A push service of the tests' own: addresses start with `tok-` and are stored in lower case; envelopes are padded
/// to one bucket of 512 bytes, which APNs' table does not have.
struct FakeServiceRules: PushServiceRules {
    static let service = PushService(rawValue: "fake")
    static let padding = PaddingTable([.classical: [512]])

    var service: PushService { Self.service }
    var padding: PaddingTable { Self.padding }

    func registration(_ address: RegisteredAddress) throws(RelayError) -> RegisteredAddress {
        guard address.push.address.hasPrefix("tok-") else {
            throw RelayError(.badPushAddress, "a fake address starts with tok-")
        }
        return RegisteredAddress(
            push: PushAddress(service: Self.service, address: address.push.address.lowercased()),
            environment: nil
        )
    }
}

/// ``RelayService`` takes each push service's rules as a value: a second service registers and submits without a
/// change to the service (docs/EXTENDING.md §2).
@Suite("Relay API with a second push service's rules")
struct PushServiceRulesTests {
    static func cleanup(_ fixture: ServiceFixture) async { await fixture.cleanup() }

    /// `bob`'s "watch" registered through the fake service: the rules' own refusal, or nil.
    static func registerWatch(_ fixture: ServiceFixture, _ bob: TestUser, _ address: String) async -> RelayError.Code? {
        await relayErrorCode {
            try await fixture.register(
                bob,
                "watch",
                RegisteredAddress(
                    push: PushAddress(service: FakeServiceRules.service, address: address),
                    environment: nil
                )
            )
        }
    }

    @Test("registration: the service's own rules decide and give the stored address; unknown services are refused")
    func registration() async throws {
        let fixture = try await ServiceFixture(services: [APNsRules(), FakeServiceRules()])
        try await withCleanup(fixture, Self.cleanup) { fixture in
            let bob = try TestUser.make("bob", devices: ["phone", "watch"])
            try await fixture.enroll(bob, token: DeliveryToken())
            #expect(await Self.registerWatch(fixture, bob, "nope") == .badPushAddress)
            #expect(await Self.registerWatch(fixture, bob, "tok-ABC") == nil)
            let devices = try await fixture.store.devices(userID: "bob")
            #expect(devices.map(\.deviceID) == ["phone", "watch"])
            #expect(devices[0].address == TestUser.address("phone"))
            #expect(
                devices[1].address
                    == RegisteredAddress(
                        push: PushAddress(service: FakeServiceRules.service, address: "tok-abc"),
                        environment: nil
                    )
            )
        }
        // The default relay (APNs alone) refuses the same address by service.
        try await ServiceFixture.with { fixture in
            let bob = try TestUser.make("bob", devices: ["phone", "watch"])
            try await fixture.enroll(bob, token: DeliveryToken())
            #expect(await Self.registerWatch(fixture, bob, "tok-abc") == .unsupportedPushService)
        }
    }

    @Test("submit: each envelope fits the padding of its device's service; one that fits only another's is refused")
    func envelopesFitTheirService() async throws {
        let fixture = try await ServiceFixture(services: [APNsRules(), FakeServiceRules()])
        try await withCleanup(fixture, Self.cleanup) { fixture in
            let alice = try TestUser.make("alice", devices: ["laptop"])
            let bob = try TestUser.make("bob", devices: ["phone", "watch"])
            let token = DeliveryToken()
            try await fixture.enroll(bob, token: token)
            #expect(await Self.registerWatch(fixture, bob, "tok-1") == nil)
            let sender = alice.devices[0]
            let apns = APNsAlertTransport.padding
            func submit(_ key: String, _ pushes: [(String, PaddingTable)]) async throws -> RelayError.Code? {
                let sealed = try pushes.map { ($0.0, try bob.sealText(from: sender, to: $0.0, padding: $0.1)) }
                return await relayErrorCode {
                    _ = try await fixture.service.submit(
                        userID: "bob",
                        authorization: "Bearer \(token.hex)",
                        idempotencyKey: key,
                        body: submitBody(sealed)
                    )
                }
            }
            #expect(try await submit("k1", [("phone", apns), ("watch", apns)]) == .malformedEnvelope)
            #expect(try await submit("k2", [("phone", FakeServiceRules.padding)]) == .malformedEnvelope)
            #expect(try await fixture.pushCount() == 0)
            #expect(try await submit("k3", [("phone", apns), ("watch", FakeServiceRules.padding)]) == nil)
            #expect(try await fixture.store.counts() == [.queued: 2])
        }
        // A relay with APNs alone refuses an envelope of the other padding at decoding.
        try await ServiceFixture.with { fixture in
            let alice = try TestUser.make("alice", devices: ["laptop"])
            let bob = try TestUser.make("bob", devices: ["phone"])
            let token = DeliveryToken()
            try await fixture.enroll(bob, token: token)
            let sealed = try bob.sealText(from: alice.devices[0], to: "phone", padding: FakeServiceRules.padding)
            let code = await relayErrorCode {
                _ = try await fixture.service.submit(
                    userID: "bob",
                    authorization: "Bearer \(token.hex)",
                    idempotencyKey: "k",
                    body: submitBody([("phone", sealed)])
                )
            }
            #expect(code == .malformedEnvelope)
        }
    }

    @Test("rules are needed once per service, and at least once")
    func rulesOncePerService() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let store = try SQLiteRelayStore(path: folder.file("relay.sqlite"))
        for services in [[], [APNsRules(), APNsRules(topics: ["a"])]] as [[any PushServiceRules]] {
            #expect(throws: RelayError(.configuration, "")) {
                _ = try RelayService(
                    store: store,
                    metrics: RelayMetrics(),
                    services: services,
                    logger: .init(label: "t")
                )
            }
        }
        await store.close()
    }
}
