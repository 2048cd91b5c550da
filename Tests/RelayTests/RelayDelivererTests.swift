import E2EECore
import Foundation
import Locking
import Logging
import RelayClient
import TestSupport
import Testing

@testable import Relay

/// A push service of the tests' own: records what it was given and reports the outcome `answer` chooses.
final class RecordingDeliverer: PushDeliverer {
    private let given = PThreadMutex<[PushDelivery]>([])
    private let calls = PThreadMutex(0)
    let answer: @Sendable (PushDelivery) -> DeliveryReport
    let service: PushService

    init(service: PushService = .apns, _ answer: @escaping @Sendable (PushDelivery) -> DeliveryReport) {
        self.service = service
        self.answer = answer
    }

    /// How many times ``deliver(_:)`` was called.
    var callCount: Int { self.calls.withLock { $0 } }

    /// Every push given so far, in order.
    var deliveries: [PushDelivery] { self.given.withLock { $0 } }

    func deliver(_ pushes: [PushDelivery]) async -> [DeliveryReport] {
        self.given.withLock { $0 += pushes }
        self.calls.withLock { $0 += 1 }
        return pushes.map(self.answer)
    }
}

/// ``DeliveryService`` with a deliverer that is not APNs: each typed outcome is recorded as the APNs answers it
/// stands for are (RelayDeliveryTests drives the same through a local APNs gateway).
@Suite("Relay delivery through a push deliverer of the tests' own")
struct RelayDelivererTests {
    static let devices = ["ok", "gone", "bad", "rejected", "later"]

    /// A store with user "u" whose devices (``devices``) have addresses, and one push queued to each, whose envelope
    /// is the device's index.
    static func queue(_ store: any RelayStore) async throws -> [String: String] {
        _ = try await store.publish(RelayStoreContractTests.list(version: 1, devices: Self.devices), nowMs: 0)
        var pushIDs: [String: String] = [:]
        for device in Self.devices {
            try await store.registerPush(userID: "u", deviceID: device, address: TestUser.address(device), nowMs: 0)
            pushIDs[device] = UUID().uuidString.lowercased()
        }
        _ = try await store.enqueue(
            NewSubmit(
                userID: "u",
                idempotencyKey: "k",
                requestDigest: [1],
                pushes: Self.devices.enumerated().map { index, device in (device, pushIDs[device]!, [UInt8(index)]) }
            ),
            nowMs: 0
        )
        return pushIDs
    }

    static func service(
        _ store: any RelayStore,
        _ deliverer: any PushDeliverer,
        maxAttempts: Int = 12,
        clock: WallClock = .fixed(1000)
    ) -> DeliveryService {
        var configuration = DeliveryService.Configuration(owner: "fake")
        configuration.jitter = 0
        configuration.maxAttempts = maxAttempts
        return DeliveryService(
            store: store,
            deliverer: deliverer,
            metrics: RelayMetrics(),
            configuration: configuration,
            clock: clock,
            logger: Logger(label: "delivery")
        )
    }

    /// The report the fake gives the push to `deviceID`'s address.
    static func report(for push: PushDelivery) -> DeliveryReport {
        switch push.address {
        case TestUser.address("ok"):
            DeliveryReport(outcome: .delivered, status: 200, label: "200", signal: .answered)
        case TestUser.address("gone"):
            DeliveryReport(outcome: .unregistered(sinceMs: 700), status: 410, label: "410", signal: .answered)
        case TestUser.address("bad"):
            DeliveryReport(outcome: .addressRefused(reason: "BadAddress"), status: 400, label: "400", signal: .answered)
        case TestUser.address("rejected"):
            DeliveryReport(outcome: .rejected(reason: "TooBig"), status: 413, label: "413", signal: .answered)
        default:
            DeliveryReport(
                outcome: .retryLater(reason: "Busy", retryAfterMs: 60_000),
                status: 429,
                label: "429",
                signal: .refused("429 Busy")
            )
        }
    }

    @Test("each outcome is recorded as its APNs counterpart: delivered, unregistered, address failed, failed, retried")
    func outcomes() async throws {
        try await RelayStoreContractTests.withSQLite { store in
            let pushIDs = try await Self.queue(store)
            let deliverer = RecordingDeliverer(Self.report(for:))
            let delivery = Self.service(store, deliverer)
            #expect(await delivery.runOnce() == Self.devices.count)

            // The deliverer got each push's current address and its envelope as submitted.
            let given = Dictionary(uniqueKeysWithValues: deliverer.deliveries.map { ($0.pushID, $0) })
            for (index, device) in Self.devices.enumerated() {
                let push = try #require(given[pushIDs[device]!])
                #expect(push.address == TestUser.address(device))
                #expect(push.envelope == [UInt8(index)])
                #expect(push.attempt == 1)
            }

            func record(_ device: String) async throws -> PushRecord {
                try #require(try await store.push(pushIDs[device]!))
            }
            let ok = try await record("ok")
            #expect(ok.state == .delivered && ok.serviceStatus == 200)
            let gone = try await record("gone")
            #expect(gone.state == .unregistered && gone.serviceStatus == 410)
            let bad = try await record("bad")
            #expect(bad.state == .failed && bad.serviceStatus == 400 && bad.serviceReason == "BadAddress")
            let rejected = try await record("rejected")
            #expect(rejected.state == .failed && rejected.serviceStatus == 413 && rejected.serviceReason == "TooBig")
            let later = try await record("later")
            #expect(later.state == .queued && later.serviceStatus == 429 && later.serviceReason == "Busy")

            // The addresses: the dead one unregistered since the service said, the refused one failed with its
            // reason, the others still active.
            let devices = Dictionary(
                uniqueKeysWithValues: try await store.devices(userID: "u").map { ($0.deviceID, $0) }
            )
            #expect(devices["gone"]?.pushState == .unregistered && devices["gone"]?.unregisteredAtMs == 700)
            #expect(devices["bad"]?.pushState == .failed && devices["bad"]?.failedReason == "BadAddress")
            #expect(["ok", "rejected", "later"].allSatisfy { devices[$0]?.pushState == .active })

            // The retry waits for the longer of the backoff (1 s) and the service's 60 s.
            #expect(try await store.lease(owner: "x", limit: 10, nowMs: 1000 + 59_999, leaseMs: 1000).isEmpty)
            let again = try await store.lease(owner: "x", limit: 10, nowMs: 1000 + 60_000, leaseMs: 1000)
            #expect(again.map(\.pushID) == [pushIDs["later"]!])
        }
    }

    @Test("a queued push whose address is of a service without a deliverer fails with unsupported-push-service")
    func unsupportedService() async throws {
        try await RelayStoreContractTests.withSQLite { store in
            let pushIDs = try await Self.queue(store)
            // Written by something else than this relay's registration, which refuses such an address.
            let fcm = RegisteredAddress(
                push: PushAddress(service: PushService(rawValue: "fcm"), address: "fcm-token"),
                environment: nil
            )
            try await store.registerPush(userID: "u", deviceID: "ok", address: fcm, nowMs: 0)
            let deliverer = RecordingDeliverer(Self.report(for:))
            #expect(await Self.service(store, deliverer).runOnce() == Self.devices.count)
            #expect(!deliverer.deliveries.contains { $0.pushID == pushIDs["ok"]! })
            let record = try #require(try await store.push(pushIDs["ok"]!))
            #expect(record.state == .failed && record.serviceReason == "unsupported-push-service")
            let device = try #require(try await store.devices(userID: "u").first { $0.deviceID == "ok" })
            #expect(device.pushState == .failed && device.failedReason == "unsupported-push-service")
        }
    }

    @Test("two push services: each deliverer gets its own service's pushes in one call, each outcome is recorded")
    func twoServices() async throws {
        try await RelayStoreContractTests.withSQLite { store in
            let pushIDs = try await Self.queue(store)
            // "later" and "bad" registered for a second service of the tests' own.
            let other = PushService(rawValue: "test-push")
            for device in ["later", "bad"] {
                let address = RegisteredAddress(
                    push: PushAddress(service: other, address: "addr-" + device),
                    environment: nil
                )
                try await store.registerPush(userID: "u", deviceID: device, address: address, nowMs: 0)
            }
            let apns = RecordingDeliverer(Self.report(for:))
            let second = RecordingDeliverer(service: other) { push in
                push.address.push.address == "addr-later"
                    ? DeliveryReport(outcome: .delivered, status: 202, label: "202", signal: .answered)
                    : DeliveryReport(outcome: .addressRefused(reason: "NoSuchAddress"), label: "x", signal: .answered)
            }
            var configuration = DeliveryService.Configuration(owner: "two")
            configuration.jitter = 0
            let delivery = DeliveryService(
                store: store,
                deliverers: [apns, second],
                metrics: RelayMetrics(),
                configuration: configuration,
                clock: .fixed(1000),
                logger: Logger(label: "delivery")
            )
            #expect(await delivery.runOnce() == Self.devices.count)
            #expect(apns.callCount == 1 && second.callCount == 1)
            #expect(Set(apns.deliveries.map(\.pushID)) == Set(["ok", "gone", "rejected"].map { pushIDs[$0]! }))
            #expect(Set(second.deliveries.map(\.pushID)) == Set(["later", "bad"].map { pushIDs[$0]! }))
            #expect(second.deliveries.allSatisfy { $0.address.push.service == other })

            let later = try #require(try await store.push(pushIDs["later"]!))
            #expect(later.state == .delivered && later.serviceStatus == 202)
            let bad = try #require(try await store.push(pushIDs["bad"]!))
            #expect(bad.state == .failed && bad.serviceReason == "NoSuchAddress")
            let ok = try #require(try await store.push(pushIDs["ok"]!))
            #expect(ok.state == .delivered && ok.serviceStatus == 200)
            let device = try #require(try await store.devices(userID: "u").first { $0.deviceID == "bad" })
            #expect(device.pushState == .failed && device.failedReason == "NoSuchAddress")
        }
    }

    @Test("the APNs deliverer refuses an address of a topic outside the app's: topic-not-allowed, APNs not asked")
    func apnsTopicOutsideTheApp() async throws {
        let deliverer = APNsDeliverer(clients: [:], topics: ["com.example.app"])
        let reports = await deliverer.deliver([
            PushDelivery(
                pushID: UUID().uuidString,
                address: TestUser.address("d", topic: "com.example.other"),
                envelope: [1],
                attempt: 1
            ),
            PushDelivery(pushID: UUID().uuidString, address: TestUser.address("d"), envelope: [1], attempt: 1),
        ])
        #expect(
            reports[0]
                == DeliveryReport(
                    outcome: .addressRefused(reason: "topic-not-allowed"),
                    label: "local-topic-not-allowed",
                    signal: .notAsked
                )
        )
        // The app's topic passes the check and reaches the next one (no client for its environment here).
        #expect(reports[1].label == "local-no-client")
    }

    @Test("a push still refused for later at its last attempt is given up, failed with the service's reason")
    func givesUp() async throws {
        try await RelayStoreContractTests.withSQLite { store in
            let pushIDs = try await Self.queue(store)
            let deliverer = RecordingDeliverer { _ in
                DeliveryReport(
                    outcome: .retryLater(reason: "Busy", retryAfterMs: nil),
                    label: "local-busy",
                    signal: .notAsked
                )
            }
            #expect(await Self.service(store, deliverer, maxAttempts: 1).runOnce() == Self.devices.count)
            let record = try #require(try await store.push(pushIDs["ok"]!))
            #expect(record.state == .failed && record.serviceReason == "gave up after 1 attempts (Busy)")
        }
    }

    @Test("readiness learns from the deliverer's signal: refusals of the relay's own fail it, an answer restores it")
    func health() async throws {
        try await RelayStoreContractTests.withSQLite { store in
            _ = try await Self.queue(store)
            let reachable = PThreadMutex(false)
            let deliverer = RecordingDeliverer { push in
                reachable.withLock { $0 }
                    ? Self.report(for: push)
                    : DeliveryReport(
                        outcome: .retryLater(reason: nil, retryAfterMs: nil),
                        label: "local-down",
                        signal: .unreachable("down")
                    )
            }
            let clock = TestClock(ms: 1000)
            let delivery = Self.service(store, deliverer, clock: clock.wallClock)
            await delivery.runOnce()
            #expect(
                delivery.health.verdict(nowMs: clock.nowMs)
                    == .apnsUnreachable("the last \(Self.devices.count) deliveries did not reach APNs: down")
            )
            reachable.withLock { $0 = true }
            clock.advance(ms: 10_000)
            #expect(await delivery.runOnce() == Self.devices.count)
            #expect(delivery.health.verdict(nowMs: clock.nowMs) == .working)
        }
    }
}
