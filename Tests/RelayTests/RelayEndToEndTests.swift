import APNsGateway
import ConnectionGuard
@_spi(Vectors) import E2EECore
import Foundation
import Logging
import Sender
import ServiceLifecycle
import Testing

@testable import Relay

/// The whole path over real sockets: RelayClient → e2ee-relay's HTTPS server (TLS, HTTP/2) → delivery workers →
/// the local APNs gateway.
@Suite("Relay end to end over HTTPS")
struct RelayEndToEndTests {
    /// A relay server running in this process on a free port with a loopback CA.
    struct RunningRelay {
        let group: ServiceGroup
        let task: Task<Void, any Error>
        let port: Int
        let caPath: String

        static func start(
            fixture: ServiceFixture,
            clients: [String: APNsClient],
            initialBackoff: Duration = .seconds(1),
            // Generous: with the whole suite running on two cores (under a sanitizer in CI), a handshake or a first
            // request can take seconds; only tests of the deadlines set them short.
            connections: ConnectionLimits = ConnectionLimits(
                handshakeTimeout: .seconds(300),
                requestHeadTimeout: .seconds(300),
                idleTimeout: .seconds(300),
                requestTimeout: .seconds(300)
            )
        ) async throws -> RunningRelay {
            let (tls, caPath) = try RelayTLS.selfSigned(directory: fixture.folder.file("tls"))
            var configuration = RelayConfiguration(database: .sqlite(path: fixture.store.path), tls: tls)
            configuration.port = 0
            configuration.delivery.pollInterval = .milliseconds(10)
            configuration.delivery.initialBackoff = initialBackoff
            configuration.connections = connections
            let delivery = DeliveryService(
                store: fixture.store,
                deliverer: APNsDeliverer(clients: clients),
                metrics: fixture.metrics,
                configuration: configuration.delivery,
                clock: fixture.clock.wallClock,
                logger: Logger(label: "delivery")
            )
            let ports = AsyncStream.makeStream(of: Int.self)
            let app = try RelayApplication.make(
                service: fixture.service,
                delivery: delivery,
                configuration: configuration,
                onRunning: { ports.continuation.yield($0) },
                logger: Logger(label: "relay")
            )
            let group = ServiceGroup(
                configuration: .init(services: [.init(service: app)], logger: Logger(label: "group"))
            )
            let task = Task { try await group.run() }
            var iterator = ports.stream.makeAsyncIterator()
            guard let port = await iterator.next() else { throw RelayError(.internalError, "the relay did not start") }
            return RunningRelay(group: group, task: task, port: port, caPath: caPath)
        }

        func stop() async throws {
            await self.group.triggerGracefulShutdown()
            try await self.task.value
        }

        /// Stops the relay (on every path out of a test); a failed graceful stop is a test failure.
        func stopRecordingErrors() async {
            do { try await self.stop() } catch { Issue.record("the relay did not stop gracefully: \(error)") }
        }
    }

    @Test("publish, register, hand out a token, fetch, submit: every push arrives at APNs byte-exact")
    func endToEnd() async throws {
        try await ServiceFixture.with { fixture in
            try await GatewayFixture.with { gateway in
                try await gateway.withClient { apns in
                    let relay = try await RunningRelay.start(fixture: fixture, clients: ["development": apns])
                    try await withCleanup(relay, { await $0.stopRecordingErrors() }) { relay in
                        try await withClient("https://127.0.0.1:\(relay.port)", ca: relay.caPath) { client in
                            let alice = try TestUser.make("alice", devices: ["laptop"])
                            let bob = try TestUser.make("bob")
                            let now = UInt64(fixture.clock.nowMs)

                            #expect(try await client.publish(bob.list) == .init(listVersion: 2, stored: true))
                            for device in bob.devices {
                                try await client.registerPush(
                                    userID: "bob",
                                    deviceID: device.deviceID,
                                    address: TestUser.address(device.deviceID),
                                    signingKey: device.signingKey,
                                    nowMs: now
                                )
                            }
                            let token = DeliveryToken()
                            #expect(
                                try await client.setDeliveryTokens(
                                    userID: "bob",
                                    deviceID: "phone",
                                    tokens: [token],
                                    signingKey: bob.devices[0].signingKey,
                                    nowMs: now
                                ) == 1
                            )

                            // Alice's side: fetch, verify, seal to every deliverable device, submit.
                            let fetched = try await client.fetchList(userID: "bob")
                            #expect(fetched.list == bob.list)
                            #expect(fetched.deliverableDevices.map(\.deviceID) == ["phone", "tablet"])
                            var sealed: [String: SealedPush] = [:]
                            for round in 0..<5 {
                                for device in fetched.deliverableDevices {
                                    sealed["\(round)/\(device.deviceID)"] = try bob.sealText(
                                        from: alice.devices[0],
                                        to: device.deviceID,
                                        body: "round \(round)"
                                    )
                                }
                                let response = try await client.submit(
                                    userID: "bob",
                                    pushes: fetched.deliverableDevices.map {
                                        ($0.deviceID, sealed["\(round)/\($0.deviceID)"]!.envelope)
                                    },
                                    token: token
                                )
                                #expect(response.pushes.count == 2)
                            }
                            // Wait for the workers (bounded; the assertion is on the bytes, not the time). Up to
                            // 120 s, like the test clients' answer timeout: under ThreadSanitizer with the whole
                            // suite running on 2 cores, the 10 pushes once took longer than the 5 s this waited.
                            try await waitUntil(tries: 12_000, every: .milliseconds(10)) {
                                gateway.sink.records.count >= 10
                            }
                            let delivered = Set(gateway.sink.records.map(\.bodyBytes))
                            #expect(gateway.sink.records.count == 10)
                            let same = delivered == Set(sealed.values.map(\.apnsBody))
                            #expect(same)
                            try await waitUntil(tries: 12_000, every: .milliseconds(10)) {
                                try await fixture.store.counts() == [.delivered: 10]
                            }
                            #expect(try await fixture.store.counts() == [.delivered: 10])

                            // A wrong token over the wire: the relay's reason code comes back.
                            do {
                                _ = try await client.submit(
                                    userID: "bob",
                                    pushes: [("phone", sealed["0/phone"]!.envelope)],
                                    token: DeliveryToken()
                                )
                                Issue.record("a submit with an unknown token was accepted")
                            } catch let error as RelayError {
                                #expect(error.code.rawValue == "bad-delivery-token")
                                #expect(error.code.httpStatus == 403)
                            }
                            // A relay that serves a list the user did not sign (here: bob's list with a device added by the server,
                            // written past the API's checks) is caught by the client's verification.
                            let mallory = try TestUser.make("bob", devices: ["ghost"])
                            let forged = bob.list.withDevices(bob.list.devices + mallory.list.devices, listVersion: 3)
                            _ = try await fixture.store.publish(
                                NewList(
                                    userID: "bob",
                                    userSigningKey: bob.list.userSigningKey.rawRepresentation,
                                    listVersion: 3,
                                    digest: forged.digest,
                                    json: forged.jsonData(),
                                    devices: forged.devices.map { ($0.deviceID, $0.signingKey.rawRepresentation) }
                                ),
                                nowMs: fixture.clock.nowMs
                            )
                            do {
                                _ = try await client.fetchList(userID: "bob")
                                Issue.record("the client accepted a list with a device the user never signed in")
                            } catch let error as RelayError {
                                #expect(error.code == .badDeviceList)
                            }
                            #expect(await client.isHealthy())
                            let metrics = try await client.metricsText()
                            #expect(metrics.contains("relay_pushes_accepted_total 10"))
                        }
                    }
                }
            }
        }
    }
}
