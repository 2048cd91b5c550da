import Foundation
import Logging
import ServiceLifecycle
import TestSupport
import Testing

@testable import Relay

/// ``buildApplication(_:logger:)`` in this process, as `e2ee-relay serve` runs it: the relay it builds answers over
/// loopback HTTPS, keeps what it was given in its store, and stops on graceful shutdown; a start that cannot succeed
/// names the step the executable turns into its exit status.
@Suite("buildApplication")
struct RelayBuilderTests {
    /// The port the built relay listens on, once it has written its port file (up to 60 s).
    static func listeningPort(_ options: ServeOptions) async throws -> Int {
        for _ in 0..<600 {
            let text = try? String(contentsOfFile: options.portFile!, encoding: .utf8)
            if let port = text.flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) { return port }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ProcessTestError("the built relay wrote no port file in 60 s: see its log above")
    }

    static func options(_ folder: TemporaryFolder, gateway: GatewayFixture? = nil) throws -> ServeOptions {
        var options = ServeOptions()
        options.database = folder.file("relay.sqlite")
        options.port = 0
        options.portFile = folder.file("port")
        options.selfSignedTLSDir = folder.file("tls")
        options.apnsKeyID = GatewayFixture.keyID
        options.apnsTeamID = GatewayFixture.teamID
        options.apnsTopics = [GatewayFixture.topic]
        options.workers = 1
        if let gateway {
            options.apnsKeyFile = try gateway.writeKeyFile()
            options.apnsURL = gateway.baseURL
            options.apnsCA = gateway.server.caCertificatePath
        }
        return options
    }

    @Test("the built relay answers health and stores a published list over HTTPS, then drains and closes its store")
    func servesAndStops() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await GatewayFixture.with { gateway in
            let options = try Self.options(folder, gateway: gateway)
            let relay = try await buildApplication(options, logger: Logger(label: "relay"))
            let group = ServiceGroup(configuration: .init(services: [relay], logger: Logger(label: "group")))
            let running = Task { try await group.run() }
            let port = try await Self.listeningPort(options)
            let url = "https://127.0.0.1:\(port)"
            let bob = try TestUser.make("bob")
            try await withClient(url, ca: folder.file("tls/ca.pem")) { client in
                #expect(await client.isHealthy())
                let published = try await client.publish(bob.list)
                #expect(published == .init(listVersion: 2, stored: true))
                let metrics = try await client.metricsText()
                #expect(metrics.contains("relay_queue_depth{state=\"queued\"} 0"))
            }
            await group.triggerGracefulShutdown()
            try await running.value

            // The relay closed its store (no lock left) with the list in it.
            let store = try SQLiteRelayStore(path: options.database)
            let stored = try await store.list(userID: "bob")
            await store.close()
            #expect(stored?.listVersion == 2)
        }
    }

    @Test("a store that cannot be opened or a malformed URL is a store failure; a missing certificate a setup one")
    func startFailures() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        func failure(_ options: ServeOptions) async -> RelayStartError? {
            do {
                _ = try await buildApplication(options, logger: Logger(label: "relay"))
                return nil
            } catch {
                return error
            }
        }
        // The gateway is here for its provider key only: the APNs key is checked before the store is opened.
        try await GatewayFixture.with { gateway in
            var options = try Self.options(folder, gateway: gateway)

            options.database = folder.file("missing/relay.sqlite")
            let missing = await failure(options)
            #expect(missing?.step == .store)
            #expect(missing?.error.code == .storageUnavailable)

            options.database = "postgres://"
            let malformed = await failure(options)
            #expect(malformed?.step == .store)
            #expect(malformed?.error.code == .configuration)

            options.database = folder.file("relay.sqlite")
            options.selfSignedTLSDir = nil
            options.tlsCert = folder.file("none.pem")
            options.tlsKey = folder.file("none.key")
            let tls = await failure(options)
            #expect(tls?.step == .setup)
            // The store is opened only after TLS and the APNs key are found usable.
            #expect(!FileManager.default.fileExists(atPath: options.database))
        }
    }

    @Test(
        "PostgreSQL: the client runs in the relay's group, migration first; a newer schema fails the start before listening",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func postgresStartup() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await GatewayFixture.with { gateway in
            var options = try Self.options(folder, gateway: gateway)
            options.database = try await PostgresTestServer.freshDatabaseURL()
            options.databaseTimeout = PostgresTestServer.operationTimeout / .seconds(1)
            let relay = try await buildApplication(options, logger: Logger(label: "relay"))
            let group = ServiceGroup(configuration: .init(services: [relay], logger: Logger(label: "group")))
            let running = Task { try await group.run() }
            let port = try await Self.listeningPort(options)
            try await withClient("https://127.0.0.1:\(port)", ca: folder.file("tls/ca.pem")) { client in
                #expect(await client.isHealthy())
                let published = try await client.publish(try TestUser.make("bob").list)
                #expect(published == .init(listVersion: 2, stored: true))
            }
            await group.triggerGracefulShutdown()
            try await running.value

            // A newer relay's schema: the built relay's group ends with the store's error, and nothing listened.
            try await PostgresTestServer.withStore(url: options.database) { store in
                try await store.executeForTesting("INSERT INTO relay_schema (version) VALUES (999)")
            }
            try FileManager.default.removeItem(atPath: options.portFile!)
            let newer = try await buildApplication(options, logger: Logger(label: "relay"))
            let failed = ServiceGroup(configuration: .init(services: [newer], logger: Logger(label: "group")))
            let error = await #expect(throws: RelayStartError.self) { try await failed.run() }
            #expect(error?.step == .store)
            #expect(error?.error.code == .storageUnavailable)
            #expect(
                error?.error.message.contains("a newer relay has migrated it") == true,
                "\(String(describing: error))"
            )
            #expect(!FileManager.default.fileExists(atPath: options.portFile!))
        }
    }
}
