import Foundation
import Locking
import Logging
import ServiceLifecycle
import TestSupport
import Testing

@testable import Relay

/// A third kind of store, as an embedder adds one: ``buildApplication(_:logger:storeKinds:)`` opens it through
/// ``RelayStoreKind`` alone, runs its service in the relay's group with its startup before the server, and closes it.
@Suite("Store kinds")
struct RelayStoreKindTests {
    /// `counted:<path>`: a SQLite file whose opening, service, startup and closing are recorded in ``events``.
    struct CountedKind: RelayStoreKind {
        let events = PThreadMutex<[String]>([])
        let failStartup: Bool

        init(failStartup: Bool = false) { self.failStartup = failStartup }

        var name: String { "Counted" }
        var argumentHelp: String { "counted:<file>" }
        func accepts(_ argument: String) -> Bool { argument.hasPrefix("counted:") }
        func startDescription(_ argument: String, options: ServeOptions) -> String {
            "Counted \(argument.dropFirst(8))"
        }

        func record(_ event: String) { self.events.withLock { $0.append(event) } }

        func open(
            _ argument: String,
            options: ServeOptions,
            logger: Logger
        ) async throws(RelayError) -> OpenedRelayStore {
            let store = try SQLiteRelayStore(path: String(argument.dropFirst(8)))
            self.record("open")
            let failStartup = self.failStartup
            return OpenedRelayStore(
                store: store,
                service: Recorded(kind: self),
                startup: { () async throws(RelayError) in
                    self.record("startup")
                    if failStartup { throw RelayError(.storageUnavailable, "the counted store is down") }
                    try await store.migrate()
                },
                close: {
                    self.record("close")
                    await store.close()
                }
            )
        }
    }

    /// The store's service: runs until graceful shutdown.
    struct Recorded: Service {
        let kind: CountedKind
        func run() async throws {
            self.kind.record("service")
            try? await gracefulShutdown()
            self.kind.record("service-stopped")
        }
    }

    @Test("a relay built with a third kind serves from it: opened once, its service and startup run, closed once")
    func thirdKindServes() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await GatewayFixture.with { gateway in
            var options = try RelayBuilderTests.options(folder, gateway: gateway)
            options.database = "counted:" + folder.file("counted.sqlite")
            let kind = CountedKind()
            let kinds: [any RelayStoreKind] = [kind] + RelayStoreKinds.all
            #expect(
                RelayServe.startLine(options, storeKinds: kinds)
                    .contains("store Counted \(folder.file("counted.sqlite"));")
            )
            let relay = try await buildApplication(options, logger: Logger(label: "relay"), storeKinds: kinds)
            #expect(kind.events.withLock { $0 } == ["open"])
            let group = ServiceGroup(configuration: .init(services: [relay], logger: Logger(label: "group")))
            let running = Task { try await group.run() }
            let port = try await RelayBuilderTests.listeningPort(options)
            try await withClient("https://127.0.0.1:\(port)", ca: folder.file("tls/ca.pem")) { client in
                let published = try await client.publish(try TestUser.make("bob").list)
                #expect(published == .init(listVersion: 2, stored: true))
            }
            await group.triggerGracefulShutdown()
            try await running.value
            let events = kind.events.withLock { $0 }
            #expect(events.filter { $0 == "open" }.count == 1)
            #expect(events.filter { $0 == "startup" }.count == 1)
            #expect(events.filter { $0 == "close" }.count == 1)
            #expect(events.last == "close", "\(events)")
            #expect(events.firstIndex(of: "service-stopped").map { $0 < events.count - 1 } == true, "\(events)")

            // The list went to the counted kind's file.
            let stored = try await SQLiteStoreKind().withStore(
                folder.file("counted.sqlite"),
                options: options,
                logger: Logger(label: "check")
            ) { try await $0.list(userID: "bob") }
            #expect(stored?.listVersion == 2)
        }
    }

    @Test(
        "a kind's failed startup stops the relay as a store failure, before it listens; a value no kind takes is refused"
    )
    func startupFailureAndNoKind() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await GatewayFixture.with { gateway in
            var options = try RelayBuilderTests.options(folder, gateway: gateway)
            options.database = "counted:" + folder.file("counted.sqlite")
            let kind = CountedKind(failStartup: true)
            let relay = try await buildApplication(options, logger: Logger(label: "relay"), storeKinds: [kind])
            let group = ServiceGroup(configuration: .init(services: [relay], logger: Logger(label: "group")))
            let error = await #expect(throws: RelayStartError.self) { try await group.run() }
            #expect(error?.step == .store)
            #expect(error?.error.code == .storageUnavailable)
            #expect(error?.error.message == "the counted store is down")
            #expect(!FileManager.default.fileExists(atPath: options.portFile!))
            #expect(kind.events.withLock { $0 }.filter { $0 == "close" }.count == 1)

            // Only the counted kind: a plain path is no store.
            options.database = folder.file("relay.sqlite")
            let refused = await #expect(throws: RelayStartError.self) {
                _ = try await buildApplication(options, logger: Logger(label: "relay"), storeKinds: [kind])
            }
            #expect(refused?.step == .store)
            #expect(refused?.error.code == .configuration)
            #expect(
                refused?.error.message
                    == "--database \(options.database) names no store this relay can open; give counted:<file>"
            )
        }
    }

    @Test("the built-in kinds: postgres URLs are PostgreSQL, anything else a SQLite file; the help names both")
    func builtInKinds() {
        #expect(RelayStoreKinds.kind(for: "postgres://u@h/d")?.name == "PostgreSQL")
        #expect(RelayStoreKinds.kind(for: "postgresql://u@h/d")?.name == "PostgreSQL")
        #expect(RelayStoreKinds.kind(for: "relay.sqlite")?.name == "SQLite")
        #expect(RelayStoreKinds.kind(for: "/var/lib/postgres://x")?.name == "SQLite")
        #expect(RelayStoreKinds.argumentHelp == "a postgres:// URL, or a SQLite file (created if missing)")
        var options = ServeOptions()
        options.database = "postgres://relay:secret@db:5432/relay"
        #expect(
            RelayStoreKinds.kind(for: options.database)?.startDescription(options.database, options: options)
                == "PostgreSQL postgres://relay:***@db:5432/relay (5 s per operation)"
        )
    }

    @Test(
        "withStore opens each built-in kind as a relay does (migrated, its pool running) and closes it",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func withStoreOfEachKind() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        var options = ServeOptions()
        options.databaseTimeout = PostgresTestServer.operationTimeout / .seconds(1)
        let bob = try TestUser.make("bob")
        for argument in [folder.file("relay.sqlite"), try await PostgresTestServer.freshDatabaseURL()] {
            let kind = try #require(RelayStoreKinds.kind(for: argument))
            let logger = Logger(label: "kind")
            let stored = try await kind.withStore(argument, options: options, logger: logger) { store in
                try await store.publish(
                    NewList(
                        userID: "bob",
                        userSigningKey: bob.list.userSigningKey.rawRepresentation,
                        listVersion: bob.list.listVersion,
                        digest: bob.list.digest,
                        json: bob.list.jsonData(),
                        devices: bob.list.devices.map { ($0.deviceID, $0.signingKey.rawRepresentation) }
                    ),
                    nowMs: 1
                )
            }
            #expect(stored, "\(kind.name)")
            // Closed: opened again (a SQLite file's lock released), the list is there.
            let version = try await kind.withStore(argument, options: options, logger: logger) { store in
                try await store.list(userID: "bob")?.listVersion
            }
            #expect(version == 2, "\(kind.name)")
        }
    }
}
