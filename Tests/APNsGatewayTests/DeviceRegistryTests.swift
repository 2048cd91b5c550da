import APNsGateway
import Foundation
import Testing

@Suite("Device token registry")
struct DeviceRegistryTests {
    private func push(
        registry: DeviceRegistry,
        token: String = testToken,
        configure: @escaping (inout GatewayConfiguration) -> Void = { _ in },
        during: @escaping @Sendable (APNsGatewayServer) -> Void = { _ in }
    ) async throws -> (H2TestClient.Response, [DeliveryRecord]) {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let sink = InMemoryDeliverySink()
        let setup: (inout GatewayConfiguration) -> Void = {
            $0.devices = registry
            configure(&$0)
        }
        let response = try await withGateway(
            directory: directory.path,
            key: key,
            sink: sink,
            configure: setup
        ) { server, port in
            during(server)
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            return try await client.send(
                path: "/3/device/\(token)",
                headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
                body: sampleBody
            )
        }
        return (response, sink.records)
    }

    @Test("an unregistered token is 410 Unregistered with the timestamp in milliseconds")
    func unregistered() async throws {
        var registry = DeviceRegistry()
        let since = Date(timeIntervalSince1970: 1_760_000_000.25)
        registry.markUnregistered(testToken, at: since)
        let (response, records) = try await self.push(registry: registry)
        #expect(response.status == 410)
        #expect(response.reason == "Unregistered")
        #expect(response.timestamp == 1_760_000_000_250)
        #expect(response.bodyText == #"{"reason":"Unregistered","timestamp":1760000000250}"#)
        #expect(records.isEmpty)
    }

    @Test("an expired token is 410 ExpiredToken with its timestamp")
    func expired() async throws {
        var registry = DeviceRegistry()
        registry.markExpired(testToken.uppercased(), at: Date(timeIntervalSince1970: 1_700_000_000))
        let (response, records) = try await self.push(registry: registry)
        #expect(response.status == 410)
        #expect(response.reason == "ExpiredToken")
        #expect(response.timestamp == 1_700_000_000_000)
        #expect(records.isEmpty)
    }

    @Test("strict mode refuses unknown tokens with BadDeviceToken and accepts registered ones")
    func strictMode() async throws {
        var registry = DeviceRegistry(requiresRegistration: true)
        let known = String(repeating: "cd", count: 32)
        registry.register(known)
        let (unknown, none) = try await self.push(registry: registry)
        #expect(unknown.status == 400)
        #expect(unknown.reason == "BadDeviceToken")
        #expect(none.isEmpty)
        let (accepted, records) = try await self.push(registry: registry, token: known.uppercased())
        #expect(accepted.status == 200)
        #expect(records.map(\.deviceToken) == [known])
    }

    @Test("a token bound to another topic is DeviceTokenNotForTopic; to another environment, BadDeviceToken")
    func boundTokens() async throws {
        var registry = DeviceRegistry()
        registry.register(testToken, DeviceRegistry.Entry(topic: "com.example.other"))
        let (wrongTopic, _) = try await self.push(
            registry: registry,
            configure: { $0.topics.insert("com.example.other") }
        )
        #expect(wrongTopic.status == 400)
        #expect(wrongTopic.reason == "DeviceTokenNotForTopic")

        registry.register(testToken, DeviceRegistry.Entry(topic: testTopic, environment: .production))
        let (wrongEnvironment, records) = try await self.push(registry: registry)
        #expect(wrongEnvironment.status == 400)
        #expect(wrongEnvironment.reason == "BadDeviceToken")
        #expect(records.isEmpty)
    }

    @Test("updateDevices changes answers while running")
    func runtimeUpdate() async throws {
        let since = Date(timeIntervalSince1970: 1_750_000_000)
        let (response, records) = try await self.push(
            registry: DeviceRegistry(),
            during: { server in server.updateDevices { $0.markUnregistered(testToken, at: since) } }
        )
        #expect(response.status == 410)
        #expect(response.timestamp == 1_750_000_000_000)
        #expect(records.isEmpty)
    }
}
