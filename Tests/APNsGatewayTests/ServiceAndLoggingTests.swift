import APNsGateway
import Foundation
import Logging
import ServiceLifecycle
import TestSupport
import Testing

@Suite("Service lifecycle and logging")
struct ServiceAndLoggingTests {
    @Test("as a Service, the gateway serves until graceful shutdown, then stops listening")
    func gracefulShutdown() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        var logger = Logger(label: "gateway-service-test")
        logger.logLevel = .warning
        let server = APNsGatewayServer(
            configuration: GatewayConfiguration(
                tlsDirectory: directory.file("tls"),
                topics: [testTopic],
                providerKeys: [key.registered()]
            ),
            sink: InMemoryDeliverySink(),
            logger: logger
        )
        let port = try await server.start()
        let group = ServiceGroup(services: [server], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            let response = try await client.send(
                headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
                body: sampleBody
            )
            #expect(response.status == 200)
            await client.close()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(server.port == port)
        // Nothing answers a push on the old port any more. (A TCP connect alone is not the test: in a parallel run
        // another test's listener may already have the freed port; only this gateway, trusted by this CA, would
        // complete TLS and answer.)
        await #expect(throws: (any Error).self) {
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            do {
                _ = try await client.send(
                    headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
                    body: sampleBody,
                    timeout: .seconds(10)
                )
            } catch {
                await client.close()
                throw error
            }
            await client.close()
        }
    }

    @Test("logs at trace level never carry the JWT, the device token or the body")
    func noSecretsInLogs() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let logs = LogCapture(label: "gateway-log-test")
        let logger = logs.logger
        let jwt = try key.jwt(issuedAt: Date())
        let server = APNsGatewayServer(
            configuration: GatewayConfiguration(
                tlsDirectory: directory.file("tls"),
                topics: [testTopic],
                providerKeys: [key.registered()]
            ),
            sink: InMemoryDeliverySink(),
            logger: logger
        )
        let port = try await server.start()
        let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
        let accepted = try await client.send(headers: alertHeaders(authorization: "bearer " + jwt), body: sampleBody)
        let rejected = try await client.send(
            headers: alertHeaders(authorization: "bearer " + jwt) + [("apns-topic", testTopic)],
            body: sampleBody
        )
        await client.close()
        try await server.shutdown()
        #expect(accepted.status == 200)
        #expect(rejected.reason == "DuplicateHeaders")
        let text = logs.text
        #expect(text.contains("push delivered"), "the test must see the request logs to mean anything")
        #expect(text.contains("push rejected"))
        for secret in [jwt, String(jwt.split(separator: ".")[2]), testToken, "New message", "AAEC"] {
            #expect(!text.contains(secret))
        }
    }

    @Test("starting twice is alreadyStarted; a taken port is bindFailed and the start can be retried")
    func startErrors() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        try await withGateway(directory: directory.path, key: key) { first, port in
            await #expect(throws: GatewayError(code: .alreadyStarted, message: "")) {
                _ = try await first.start()
            }
            let clash = APNsGatewayServer(
                configuration: GatewayConfiguration(
                    port: port,
                    tlsDirectory: directory.file("tls2"),
                    topics: [testTopic],
                    providerKeys: [key.registered()]
                ),
                sink: InMemoryDeliverySink(),
                logger: Logger(label: "clash")
            )
            await #expect(throws: GatewayError(code: .bindFailed, message: "")) {
                _ = try await clash.start()
            }
            await #expect(throws: GatewayError(code: .bindFailed, message: "")) {
                _ = try await clash.start()
            }
        }
    }
}
