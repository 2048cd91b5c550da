import APNsGateway
import E2EECore
import Foundation
import Logging
import Sender
import TestSupport
import Testing

@testable import Relay

/// Delivery through the Sender's APNs client to a real local gateway (TLS + HTTP/2): bodies byte-exact, 410 marks
/// the address, 5xx is retried later, duplicates are counted.
@Suite("Relay delivery to a local APNs gateway")
struct RelayDeliveryTests {
    static func delivery(_ fixture: ServiceFixture, _ client: APNsClient) -> DeliveryService {
        var configuration = DeliveryService.Configuration(owner: "test-\(UUID().uuidString.prefix(8))")
        configuration.jitter = 0
        return DeliveryService(
            store: fixture.store,
            deliverer: APNsDeliverer(clients: ["development": client, "production": client]),
            metrics: fixture.metrics,
            configuration: configuration,
            clock: fixture.clock.wallClock,
            logger: Logger(label: "delivery")
        )
    }

    @Test("submitted envelopes arrive at APNs as the uniform alert body, byte for byte, with the uniform headers")
    func byteExact() async throws {
        try await ServiceFixture.with { fixture in
            try await GatewayFixture.with { gateway in
                try await gateway.withClient { client in
                    let alice = try TestUser.make("alice", devices: ["laptop"])
                    let bob = try TestUser.make("bob")
                    let token = DeliveryToken()
                    try await fixture.enroll(bob, token: token)
                    let phone = try bob.sealText(from: alice.devices[0], to: "phone")
                    let tablet = try bob.sealText(from: alice.devices[0], to: "tablet")
                    let accepted = try await fixture.service.submit(
                        userID: "bob",
                        authorization: "Bearer \(token.hex)",
                        idempotencyKey: "k",
                        body: submitBody([("phone", phone), ("tablet", tablet)])
                    )
                    let delivery = Self.delivery(fixture, client)
                    #expect(await delivery.runOnce() == 2)

                    let records = gateway.sink.records
                    #expect(records.count == 2)
                    let byToken = Dictionary(uniqueKeysWithValues: records.map { ($0.deviceToken, $0) })
                    let phoneRecord = try #require(byToken[TestUser.token("phone")])
                    let tabletRecord = try #require(byToken[TestUser.token("tablet")])
                    #expect(phoneRecord.bodyBytes == phone.apnsBody)
                    #expect(tabletRecord.bodyBytes == tablet.apnsBody)
                    #expect(phoneRecord.bodyBytes.count == 2233)
                    #expect(phoneRecord.apnsID.lowercased() == accepted.pushes[0].pushID)
                    for record in records {
                        #expect(record.headers["apns-push-type"] == "alert")
                        #expect(record.headers["apns-priority"] == "10")
                        #expect(record.headers["apns-expiration"] == "0")
                        #expect(record.headers["apns-topic"] == "com.example.app")
                        #expect(record.headers["apns-collapse-id"] == nil)
                    }
                    // The phone can open what the relay delivered.
                    let opened = try PushPayload.open(
                        body: phoneRecord.bodyBytes,
                        deviceKey: { bob.device("phone").deviceKey(for: $0, nowMs: 1_800_000_000_000) },
                        signingKey: { _, id in alice.list.device(signingKeyID: id)?.signingKey }
                    )
                    #expect(opened.message.messageID == phone.message.messageID)
                    #expect(try await fixture.store.counts() == [.delivered: 2])
                    let metrics = String(decoding: fixture.metrics.render(), as: UTF8.self)
                    #expect(metrics.contains(#"relay_deliveries_total{status="200"} 2"#))
                    #expect(metrics.contains("relay_enqueue_to_delivered_seconds_count 2"))
                }
            }
        }
    }

    @Test("410 Unregistered marks the push address; the list fetch shows it and submits to it are refused")
    func unregistered() async throws {
        let alice = try TestUser.make("alice", devices: ["laptop"])
        let bob = try TestUser.make("bob")
        var devices = DeviceRegistry()
        devices.markUnregistered(TestUser.token("tablet"), at: Date(timeIntervalSince1970: 1_700_000_000))
        try await ServiceFixture.with { fixture in
            try await GatewayFixture.with(devices: devices) { gateway in
                try await gateway.withClient { client in
                    let token = DeliveryToken()
                    try await fixture.enroll(bob, token: token)
                    let accepted = try await fixture.service.submit(
                        userID: "bob",
                        authorization: "Bearer \(token.hex)",
                        idempotencyKey: "k",
                        body: submitBody([
                            ("phone", try bob.sealText(from: alice.devices[0], to: "phone")),
                            ("tablet", try bob.sealText(from: alice.devices[0], to: "tablet")),
                        ])
                    )
                    #expect(await Self.delivery(fixture, client).runOnce() == 2)
                    #expect(try await fixture.store.push(accepted.pushes[0].pushID)?.state == .delivered)
                    let tablet = try await fixture.store.push(accepted.pushes[1].pushID)
                    #expect(tablet?.state == .unregistered)
                    #expect(tablet?.serviceStatus == 410)
                    let fetched = try await fixture.service.fetch(userID: "bob")
                    #expect(
                        fetched.devices == [
                            .init(deviceID: "phone", push: .active),
                            .init(deviceID: "tablet", push: .unregistered, unregisteredAtMs: 1_700_000_000_000),
                        ]
                    )
                    #expect(
                        await relayErrorCode {
                            _ = try await fixture.service.submit(
                                userID: "bob",
                                authorization: "Bearer \(token.hex)",
                                idempotencyKey: "k2",
                                body: submitBody([("tablet", try bob.sealText(from: alice.devices[0], to: "tablet"))])
                            )
                        } == .pushAddressUnregistered
                    )
                    // The tablet registers a new token: active again.
                    let registration = try RelayAuthorization.signedRegistration(
                        userID: "bob",
                        deviceID: "tablet",
                        address: TestUser.address("tablet2"),
                        signingKey: bob.device("tablet").signingKey,
                        nowMs: UInt64(fixture.clock.nowMs)
                    )
                    try await fixture.service.registerPush(
                        userID: "bob",
                        deviceID: "tablet",
                        body: RelayRouter.encode(registration)
                    )
                    #expect(try await fixture.service.fetch(userID: "bob").devices.map(\.push) == [.active, .active])
                }
            }
        }
    }

    @Test("503 from APNs: the push goes back to the queue with a backoff, then is delivered")
    func retriedLater() async throws {
        let alice = try TestUser.make("alice", devices: ["laptop"])
        let bob = try TestUser.make("bob", devices: ["phone"])
        try await ServiceFixture.with { fixture in
            try await GatewayFixture.with(faults: FaultInjection(serviceUnavailableRate: 1)) { failing in
                try await failing.withClient { failingClient in
                    let token = DeliveryToken()
                    try await fixture.enroll(bob, token: token)
                    let accepted = try await fixture.service.submit(
                        userID: "bob",
                        authorization: "Bearer \(token.hex)",
                        idempotencyKey: "k",
                        body: submitBody([("phone", try bob.sealText(from: alice.devices[0], to: "phone"))])
                    )
                    let pushID = accepted.pushes[0].pushID
                    #expect(await Self.delivery(fixture, failingClient).runOnce() == 1)
                    let afterFailure = try await fixture.store.push(pushID)
                    #expect(afterFailure?.state == .queued)
                    #expect(afterFailure?.serviceStatus == 503)
                    #expect(afterFailure?.attempts == 1)
                    // Not due before the backoff (1 s for the first retry).
                    try await GatewayFixture.with { working in
                        try await working.withClient { workingClient async throws in
                            #expect(await Self.delivery(fixture, workingClient).runOnce() == 0)
                            fixture.clock.advance(ms: 1000)
                            #expect(await Self.delivery(fixture, workingClient).runOnce() == 1)
                            #expect(try await fixture.store.push(pushID)?.state == .delivered)
                            #expect(try await fixture.store.push(pushID)?.attempts == 2)
                            #expect(working.sink.records.count == 1)
                            let metrics = String(decoding: fixture.metrics.render(), as: UTF8.self)
                            #expect(metrics.contains(#"relay_deliveries_total{status="503"} 1"#))
                            #expect(metrics.contains("relay_delivery_retries_total 1"))
                        }
                    }
                }
            }
        }
    }

    @Test(
        "APNs unreachable (connection refused): the push stays queued, is retried with backoff and counted, then delivered"
    )
    func unreachableThenDelivered() async throws {
        let alice = try TestUser.make("alice", devices: ["laptop"])
        let bob = try TestUser.make("bob", devices: ["phone"])
        let closedPort = try freeLoopbackPort()
        try await ServiceFixture.with { fixture in
            try await GatewayFixture.with { gateway in
                let token = DeliveryToken()
                try await fixture.enroll(bob, token: token)
                let sealed = try bob.sealText(from: alice.devices[0], to: "phone")
                let accepted = try await fixture.service.submit(
                    userID: "bob",
                    authorization: "Bearer \(token.hex)",
                    idempotencyKey: "k",
                    body: submitBody([("phone", sealed)])
                )
                let pushID = accepted.pushes[0].pushID
                try await gateway.withClient(
                    baseURL: "https://127.0.0.1:\(closedPort)",
                    connectTimeout: .seconds(2)
                ) { unreachable async throws in
                    let delivery = Self.delivery(fixture, unreachable)
                    #expect(await delivery.runOnce() == 1)
                    #expect(try await fixture.store.push(pushID)?.state == .queued)
                    #expect(try await fixture.store.push(pushID)?.attempts == 1)
                    #expect(await delivery.runOnce() == 0)  // backoff: 1 s
                    fixture.clock.advance(ms: 1000)
                    #expect(await delivery.runOnce() == 1)
                    #expect(try await fixture.store.push(pushID)?.attempts == 2)
                    fixture.clock.advance(ms: 1999)
                    #expect(await delivery.runOnce() == 0)  // backoff: 2 s
                }
                // APNs is back.
                fixture.clock.advance(ms: 1)
                try await gateway.withClient { client in
                    #expect(await Self.delivery(fixture, client).runOnce() == 1)
                }
                let record = try await fixture.store.push(pushID)
                #expect(record?.state == .delivered)
                #expect(record?.attempts == 3)
                #expect(gateway.sink.records.map(\.bodyBytes) == [sealed.apnsBody])
                let metrics = String(decoding: fixture.metrics.render(), as: UTF8.self)
                #expect(metrics.contains("relay_delivery_retries_total 2"), "\(metrics)")
                #expect(metrics.contains(#"relay_deliveries_total{status="200"} 1"#))
                let localFailures = metrics.split(separator: "\n").filter {
                    $0.hasPrefix(#"relay_deliveries_total{status="local-"#)
                }
                #expect(localFailures.map { $0.split(separator: " ").last } == ["2"], "\(metrics)")
            }
        }
    }

    @Test("a lease that expires is taken again; the second completion is counted as a duplicate delivery")
    func leaseExpiryDuplicate() async throws {
        try await ServiceFixture.with { fixture in
            let alice = try TestUser.make("alice", devices: ["laptop"])
            let bob = try TestUser.make("bob", devices: ["phone"])
            let token = DeliveryToken()
            try await fixture.enroll(bob, token: token)
            _ = try await fixture.service.submit(
                userID: "bob",
                authorization: "Bearer \(token.hex)",
                idempotencyKey: "k",
                body: submitBody([("phone", try bob.sealText(from: alice.devices[0], to: "phone"))])
            )
            // Instance A leases and "dies" (never completes).
            let leasedByA = try await fixture.store.lease(
                owner: "A",
                limit: 10,
                nowMs: fixture.clock.nowMs,
                leaseMs: 60_000
            )
            #expect(leasedByA.count == 1)
            #expect(
                try await fixture.store.lease(
                    owner: "B",
                    limit: 10,
                    nowMs: fixture.clock.nowMs + 59_999,
                    leaseMs: 60_000
                )
                .isEmpty
            )
            let leasedByB = try await fixture.store.lease(
                owner: "B",
                limit: 10,
                nowMs: fixture.clock.nowMs + 60_000,
                leaseMs: 60_000
            )
            #expect(leasedByB.map(\.pushID) == leasedByA.map(\.pushID))
            #expect(leasedByB.first?.attempts == 2)
            #expect(
                try await fixture.store.complete(
                    leasedByB[0].pushID,
                    owner: "B",
                    outcome: .delivered(status: 200),
                    nowMs: fixture.clock.nowMs
                ) == .recorded
            )
            // A was only slow: it completes too.
            #expect(
                try await fixture.store.complete(
                    leasedByA[0].pushID,
                    owner: "A",
                    outcome: .delivered(status: 200),
                    nowMs: fixture.clock.nowMs
                ) == .alreadyCompleted
            )
            #expect(try await fixture.store.push(leasedByA[0].pushID)?.completions == 2)
        }
    }
}
