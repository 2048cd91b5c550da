import APNsGateway
import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import LoopbackPKI
import NIOCore
import NIOSSL
import Sender
import TestSupport
import Testing

@testable import Relay

/// Readiness tells the truth about delivery, and APNs' permanent refusals reach the served list
/// (docs/RELAY.md "Health", "Queue and delivery").
@Suite("Relay readiness and APNs refusals")
struct RelayReadinessTests {
    /// Bob (phone, tablet) enrolled through the service, one submit of one push per device.
    static func submitOne(_ fixture: ServiceFixture, _ bob: TestUser, token: DeliveryToken, key: String) async throws {
        let alice = try TestUser.make("alice", devices: ["laptop"])
        _ = try await fixture.service.submit(
            userID: "bob",
            authorization: "Bearer \(token.hex)",
            idempotencyKey: key,
            body: submitBody(
                try bob.devices.map { ($0.deviceID, try bob.sealText(from: alice.devices[0], to: $0.deviceID)) }
            )
        )
    }

    /// `GET path` at the relay: the status and the JSON body's fields.
    static func health(_ url: String, _ ca: String, _ path: String) async throws -> (Int, [String: String]) {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(ca)
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        // The request's own 60 s bound covers connecting too: AsyncHTTPClient's 10 s default failed this test while
        // the whole suite loaded the machine.
        configuration.timeout.connect = .seconds(60)
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let answer: (Int, [String: String])
        do {
            let response = try await http.execute(HTTPClientRequest(url: url + path), timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 16)
            let fields = (try? JSONDecoder().decode([String: String].self, from: Data(Array(buffer: body)))) ?? [:]
            answer = (Int(response.status.code), fields)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try? await http.shutdown()
        return answer
    }

    @Test("APNs behind a certificate the relay does not trust: readiness 503 apns-unreachable naming it, liveness 200")
    func readinessWhenDeliveryFails() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        // A CA that did not sign the gateway's certificate (the issue's case: the relay's own CA written over the
        // gateway's ca.pem, then given as --apns-ca).
        let stranger = try LoopbackCertificates(caCommonName: "e2ee-relay local CA")
        try stranger.writeCA(to: folder.file("stranger-ca.pem"))
        try await ServiceFixture.with { fixture in
            try await GatewayFixture.with { gateway in
                let configuration = try APNsClientConfiguration(
                    environment: .custom(baseURL: gateway.baseURL, trustedCAPEMPath: folder.file("stranger-ca.pem")),
                    keyID: GatewayFixture.keyID,
                    teamID: GatewayFixture.teamID,
                    signingKey: APNsSigningKey(privateKey: gateway.key),
                    streamTimeout: .seconds(60),
                    connectTimeout: .seconds(60),
                    retryPolicy: .never
                )
                let apns = APNsClient(configuration: configuration, logger: Logger(label: "apns"))
                try await withCleanup(apns, { await $0.shutdown() }) { apns in
                    let relay = try await RelayEndToEndTests.RunningRelay.start(
                        fixture: fixture,
                        clients: ["development": apns],
                        initialBackoff: .milliseconds(100)
                    )
                    try await withCleanup(relay, { await $0.stopRecordingErrors() }) { relay in
                        let url = "https://127.0.0.1:\(relay.port)"
                        let bob = try TestUser.make("bob")
                        let token = DeliveryToken()
                        try await fixture.enroll(bob, token: token)
                        #expect(try await Self.health(url, relay.caPath, "/v1/health").0 == 200)
                        // Four pushes, four attempts (the test's clock stands still, so no retry falls due).
                        try await Self.submitOne(fixture, bob, token: token, key: "k1")
                        try await Self.submitOne(fixture, bob, token: token, key: "k2")
                        var answer: (Int, [String: String]) = (0, [:])
                        try await waitUntil(tries: 600, every: .milliseconds(50)) {
                            answer = try await Self.health(url, relay.caPath, "/v1/health")
                            return answer.0 == 503
                        }
                        #expect(answer.0 == 503)
                        #expect(answer.1["status"] == "apns-unreachable", "\(answer)")
                        #expect(answer.1["message"]?.contains("certificate") == true, "\(answer)")
                        #expect(try await Self.health(url, relay.caPath, "/v1/health/ready").0 == 503)
                        #expect(
                            try await Self.health(url, relay.caPath, "/v1/health/live") == (200, ["status": "live"])
                        )
                        #expect(gateway.sink.records.isEmpty)
                        // The pushes wait for a relay that can deliver them: none was given up.
                        #expect(try await fixture.store.counts()[.failed] == nil)
                    }
                }
            }
        }
    }

    @Test(
        "400 DeviceTokenNotForTopic fails the push and marks the address failed with the reason; registering clears it"
    )
    func permanentRefusalMarksTheAddress() async throws {
        var devices = DeviceRegistry()
        devices.register(TestUser.token("tablet"), .init(topic: "com.example.other"))
        try await ServiceFixture.with { fixture in
            try await GatewayFixture.with(devices: devices) { gateway in
                try await gateway.withClient { apns in
                    let bob = try TestUser.make("bob")
                    let token = DeliveryToken()
                    try await fixture.enroll(bob, token: token)
                    try await Self.submitOne(fixture, bob, token: token, key: "k1")
                    let delivery = DeliveryService(
                        store: fixture.store,
                        deliverer: APNsDeliverer(clients: ["development": apns]),
                        metrics: fixture.metrics,
                        configuration: DeliveryService.Configuration(owner: "test"),
                        clock: fixture.clock.wallClock,
                        logger: Logger(label: "delivery")
                    )
                    #expect(await delivery.runOnce() == 2)
                    #expect(try await fixture.store.counts() == [.delivered: 1, .failed: 1])
                    let (_, states) = try await fixture.service.fetch(userID: "bob")
                    #expect(states.map(\.push) == [.active, .failed])
                    #expect(states[1].failedReason == "DeviceTokenNotForTopic")
                    let json = String(decoding: RelayRouter.encode(states), as: UTF8.self)
                    #expect(json.contains(#""failed_reason":"DeviceTokenNotForTopic""#), "\(json)")
                    #expect(json.contains(#""push":"failed""#))
                    // APNs answered: delivery works, the address was wrong.
                    #expect(delivery.health.verdict(nowMs: fixture.clock.nowMs) == .working)

                    let code = await relayErrorCode { try await Self.submitOne(fixture, bob, token: token, key: "k2") }
                    #expect(code == .pushAddressFailed)
                    // The device registers again (a new token from APNs): the address is active again.
                    try await fixture.enroll(bob, token: token)
                    #expect(try await fixture.service.fetch(userID: "bob").devices.map(\.push) == [.active, .active])
                }
            }
        }
    }

    @Test("403 InvalidProviderToken (the relay's key): the push waits for a retry, the address stays, readiness fails")
    func keyRefusalRetries() async throws {
        try await ServiceFixture.with { fixture in
            try await GatewayFixture.with { gateway in
                var configuration = try gateway.clientConfiguration()
                configuration = try APNsClientConfiguration(
                    environment: configuration.environment,
                    keyID: GatewayFixture.keyID,
                    teamID: GatewayFixture.teamID,
                    signingKey: APNsSigningKey(privateKey: P256.Signing.PrivateKey()),
                    streamTimeout: .seconds(60),
                    connectTimeout: .seconds(60),
                    retryPolicy: .never
                )
                let apns = APNsClient(configuration: configuration, logger: Logger(label: "apns"))
                try await withCleanup(apns, { await $0.shutdown() }) { apns in
                    let bob = try TestUser.make("bob", devices: ["phone"])
                    let token = DeliveryToken()
                    try await fixture.enroll(bob, token: token)
                    let delivery = DeliveryService(
                        store: fixture.store,
                        deliverer: APNsDeliverer(clients: ["development": apns]),
                        metrics: fixture.metrics,
                        configuration: DeliveryService.Configuration(owner: "test"),
                        clock: fixture.clock.wallClock,
                        logger: Logger(label: "delivery")
                    )
                    for round in 0..<3 {
                        try await Self.submitOne(fixture, bob, token: token, key: "k\(round)")
                        #expect(await delivery.runOnce() == 1)
                    }
                    #expect(try await fixture.store.counts() == [.queued: 3])
                    #expect(try await fixture.service.fetch(userID: "bob").devices.map(\.push) == [.active])
                    guard case .failing(let message) = delivery.health.verdict(nowMs: fixture.clock.nowMs) else {
                        Issue.record("readiness does not report the failing deliveries")
                        return
                    }
                    #expect(message.contains("403 InvalidProviderToken"), "\(message)")
                    #expect(message.contains("--apns-key-id"), "\(message)")
                }
            }
        }
    }

    @Test("a push address for a topic this relay does not deliver for is refused: topic-not-allowed")
    func topicsOutsideTheAppAreRefused() async throws {
        let fixture = try await ServiceFixture(services: [APNsRules(topics: ["com.example.app"])])
        let cleanup: (ServiceFixture) async -> Void = { await $0.cleanup() }
        try await withCleanup(fixture, cleanup) { fixture in
            let bob = try TestUser.make("bob", devices: ["phone"])
            _ = try await fixture.service.publish(userID: "bob", body: bob.list.jsonData())
            for (topic, expected) in [("com.example.other", RelayError.Code.topicNotAllowed), ("com.example.app", nil)]
            {
                let registration = try RelayAuthorization.signedRegistration(
                    userID: "bob",
                    deviceID: "phone",
                    address: TestUser.address("phone", topic: topic),
                    signingKey: bob.devices[0].signingKey,
                    nowMs: UInt64(fixture.clock.nowMs)
                )
                let code = await relayErrorCode {
                    try await fixture.service.registerPush(
                        userID: "bob",
                        deviceID: "phone",
                        body: RelayRouter.encode(registration)
                    )
                }
                #expect(code == expected, "\(topic)")
            }
            #expect(
                try await fixture.store.devices(userID: "bob").map(\.address?.push.apns?.topic) == ["com.example.app"]
            )
        }
    }

    @Test("two delivery tokens flooding a recipient leave a third token its share: it is not refused")
    func tokenShareOfTheRecipient() async throws {
        try await ServiceFixture.with { fixture in
            let bob = try TestUser.make("bob", devices: ["phone"])
            let alice = try TestUser.make("alice", devices: ["laptop"])
            let tokens = [DeliveryToken(), DeliveryToken(), DeliveryToken()]
            try await fixture.enroll(bob, token: tokens[0])
            let set = try RelayAuthorization.signedTokenSet(
                userID: "bob",
                deviceID: "phone",
                tokens: tokens,
                signingKey: bob.devices[0].signingKey,
                nowMs: UInt64(fixture.clock.nowMs)
            )
            _ = try await fixture.service.replaceTokens(userID: "bob", body: RelayRouter.encode(set))
            func submit(_ token: DeliveryToken, _ key: String) async -> RelayError.Code? {
                await relayErrorCode {
                    _ = try await fixture.service.submit(
                        userID: "bob",
                        authorization: "Bearer \(token.hex)",
                        idempotencyKey: key,
                        body: submitBody([("phone", try bob.sealText(from: alice.devices[0], to: "phone"))])
                    )
                }
            }
            // Two tokens flood (the clock stands still: no refill) until each is refused.
            var accepted = [0, 0]
            for flooder in 0..<2 {
                for index in 0..<100 where await submit(tokens[flooder], "f\(flooder)-\(index)") == nil {
                    accepted[flooder] += 1
                }
            }
            // The default recipient burst is 60: each of the three tokens may take 20 of it.
            #expect(accepted == [20, 20])
            for index in 0..<3 {
                #expect(await submit(tokens[2], "honest-\(index)") == nil, "the third token was refused")
            }
        }
    }
}
