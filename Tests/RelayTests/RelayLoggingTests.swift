import APNsGateway
import E2EECore
import Foundation
import InMemoryLogging
import Logging
import Sender
import Testing

@testable import Relay

/// The relay's logs (its own and the APNs client's, at trace level) never carry a delivery token or its hash, a
/// device token, an envelope, or anything of the sender: the relay never learns who sends.
@Suite("Relay logs: no tokens, envelopes or sender identity")
struct RelayLoggingTests {
    @Test("a full enroll, submit, deliver and 410 cycle logs ids and counts only")
    func nothingSecretInLogs() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "relay-log-test", factory: { _ in handler })
        logger.logLevel = .trace
        var devices = DeviceRegistry()
        devices.markUnregistered(TestUser.token("tablet"), at: Date(timeIntervalSince1970: 1_700_000_000))
        try await ServiceFixture.with(logger: logger) { fixture in
            let (store, metrics, clock, service) = (fixture.store, fixture.metrics, fixture.clock, fixture.service)
            let alice = try TestUser.make("alice", devices: ["laptop"])
            let bob = try TestUser.make("bob")
            let token = DeliveryToken()
            try await fixture.enroll(bob, token: token)
            // The APNs client logs to the same handler, at trace level too.
            try await GatewayFixture.with(devices: devices) { gateway in
                try await gateway.withClient(logger: logger) { client in
                    let phone = try bob.sealText(from: alice.devices[0], to: "phone")
                    let tablet = try bob.sealText(from: alice.devices[0], to: "tablet")
                    _ = try await service.submit(
                        userID: "bob",
                        authorization: "Bearer \(token.hex)",
                        idempotencyKey: "k",
                        body: submitBody([("phone", phone), ("tablet", tablet)])
                    )
                    _ = await relayErrorCode {
                        _ = try await service.submit(
                            userID: "bob",
                            authorization: "Bearer \(DeliveryToken().hex)",
                            idempotencyKey: "k2",
                            body: submitBody([("phone", phone)])
                        )
                    }
                    var configuration = DeliveryService.Configuration(owner: "log-test")
                    configuration.jitter = 0
                    let delivery = DeliveryService(
                        store: store,
                        deliverer: APNsDeliverer(clients: ["development": client]),
                        metrics: metrics,
                        configuration: configuration,
                        clock: clock.wallClock,
                        logger: logger
                    )
                    #expect(await delivery.runOnce() == 2)
                    #expect(gateway.sink.records.count == 1)  // the tablet is answered 410

                    let text = handler.entries.map { entry in
                        "\(entry.message) \(entry.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " "))"
                    }.joined(separator: "\n")
                    #expect(handler.entries.count >= 5)
                    let forbidden: [(String, String)] = [
                        ("delivery token", token.hex),
                        ("delivery token hash", Hex.encode(token.sha256)),
                        ("phone device token", TestUser.token("phone")),
                        ("tablet device token", TestUser.token("tablet")),
                        // Not a prefix either: 8 hex digits of a token name the device as well as the token does.
                        ("phone device token prefix", String(TestUser.token("phone").prefix(8))),
                        ("tablet device token prefix", String(TestUser.token("tablet").prefix(8))),
                        ("phone envelope", String(Data(phone.envelope.serialized).base64EncodedString().prefix(48))),
                        ("tablet envelope", String(Data(tablet.envelope.serialized).base64EncodedString().prefix(48))),
                        ("sender user id", "alice"),
                        ("sender device", "laptop"),
                    ]
                    for (what, value) in forbidden {
                        #expect(!text.lowercased().contains(value.lowercased()), "the logs contain the \(what)")
                    }
                    let metricsText = String(decoding: metrics.render(), as: UTF8.self)
                    #expect(!metricsText.contains("bob"))
                    #expect(!metricsText.contains("alice"))
                }
            }
        }
    }
}
