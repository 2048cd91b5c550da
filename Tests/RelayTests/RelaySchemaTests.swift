import E2EECore
import Foundation
import Logging
import PushTransport
import Testing

@testable import Relay

/// The relay's versioned schema on both stores: a fresh database ends at the latest version, a database made before
/// versions were recorded is adopted with its rows, and a newer or foreign database is refused with what to do.
@Suite("Relay schema: one versioned list of migrations for both stores")
struct RelaySchemaTests {
    /// The schema as the relay created it before versions were recorded (until 2026-11-27), exactly: SQLite
    /// dialect. `withFailedReason: false` is the shape before devices had failed_reason, with the first queue index.
    static func legacySQLite(withFailedReason: Bool = true) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS lists (user_id TEXT PRIMARY KEY, user_signing_key BLOB NOT NULL,
              list_version INTEGER NOT NULL, list_digest BLOB NOT NULL, list_json BLOB NOT NULL,
              updated_at_ms INTEGER NOT NULL)
            """,
            """
            CREATE TABLE IF NOT EXISTS devices (user_id TEXT NOT NULL, device_id TEXT NOT NULL, position INTEGER NOT NULL,
              signing_key BLOB NOT NULL, device_token TEXT, topic TEXT, environment TEXT, registered_at_ms INTEGER,
              unregistered_at_ms INTEGER\(withFailedReason ? ", failed_reason TEXT" : ""), PRIMARY KEY (user_id, device_id))
            """,
            """
            CREATE TABLE IF NOT EXISTS delivery_tokens (token_sha256 BLOB PRIMARY KEY, user_id TEXT NOT NULL,
              created_at_ms INTEGER NOT NULL)
            """,
            "CREATE TABLE IF NOT EXISTS auth_nonces (nonce BLOB PRIMARY KEY, expires_at_ms INTEGER NOT NULL)",
            """
            CREATE TABLE IF NOT EXISTS submissions (user_id TEXT NOT NULL, idempotency_key TEXT NOT NULL,
              request_sha256 BLOB NOT NULL, response TEXT NOT NULL, created_at_ms INTEGER NOT NULL,
              PRIMARY KEY (user_id, idempotency_key))
            """,
            """
            CREATE TABLE IF NOT EXISTS pushes (seq INTEGER PRIMARY KEY AUTOINCREMENT, push_id TEXT NOT NULL UNIQUE,
              user_id TEXT NOT NULL, device_id TEXT NOT NULL, body BLOB, state TEXT NOT NULL,
              attempts INTEGER NOT NULL, next_attempt_at_ms INTEGER NOT NULL, lease_owner TEXT,
              lease_expires_at_ms INTEGER, enqueued_at_ms INTEGER NOT NULL, completed_at_ms INTEGER,
              apns_status INTEGER, apns_reason TEXT, completions INTEGER NOT NULL)
            """,
        ] + Self.legacyIndexes(withFailedReason)
    }

    /// The same, PostgreSQL dialect (failed_reason was added by `ALTER TABLE`).
    static func legacyPostgres(withFailedReason: Bool = true) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS lists (user_id TEXT PRIMARY KEY, user_signing_key BYTEA NOT NULL,
              list_version BIGINT NOT NULL, list_digest BYTEA NOT NULL, list_json BYTEA NOT NULL,
              updated_at_ms BIGINT NOT NULL)
            """,
            """
            CREATE TABLE IF NOT EXISTS devices (user_id TEXT NOT NULL, device_id TEXT NOT NULL, position BIGINT NOT NULL,
              signing_key BYTEA NOT NULL, device_token TEXT, topic TEXT, environment TEXT, registered_at_ms BIGINT,
              unregistered_at_ms BIGINT, PRIMARY KEY (user_id, device_id))
            """,
        ] + (withFailedReason ? ["ALTER TABLE devices ADD COLUMN IF NOT EXISTS failed_reason TEXT"] : []) + [
            """
            CREATE TABLE IF NOT EXISTS delivery_tokens (token_sha256 BYTEA PRIMARY KEY, user_id TEXT NOT NULL,
              created_at_ms BIGINT NOT NULL)
            """,
            "CREATE TABLE IF NOT EXISTS auth_nonces (nonce BYTEA PRIMARY KEY, expires_at_ms BIGINT NOT NULL)",
            """
            CREATE TABLE IF NOT EXISTS submissions (user_id TEXT NOT NULL, idempotency_key TEXT NOT NULL,
              request_sha256 BYTEA NOT NULL, response TEXT NOT NULL, created_at_ms BIGINT NOT NULL,
              PRIMARY KEY (user_id, idempotency_key))
            """,
            """
            CREATE TABLE IF NOT EXISTS pushes (seq BIGSERIAL PRIMARY KEY, push_id TEXT NOT NULL UNIQUE,
              user_id TEXT NOT NULL, device_id TEXT NOT NULL, body BYTEA, state TEXT NOT NULL,
              attempts BIGINT NOT NULL, next_attempt_at_ms BIGINT NOT NULL, lease_owner TEXT,
              lease_expires_at_ms BIGINT, enqueued_at_ms BIGINT NOT NULL, completed_at_ms BIGINT,
              apns_status BIGINT, apns_reason TEXT, completions BIGINT NOT NULL)
            """,
        ] + Self.legacyIndexes(withFailedReason)
    }

    /// The queue's indexes then (the same on both stores); the older shape had the first one.
    static func legacyIndexes(_ current: Bool) -> [String] {
        current
            ? [
                "CREATE INDEX IF NOT EXISTS pushes_queued_due ON pushes (next_attempt_at_ms, seq) WHERE state = 'queued'",
                "CREATE INDEX IF NOT EXISTS pushes_leased_due ON pushes (lease_expires_at_ms, seq) WHERE state = 'leased'",
            ]
            : ["CREATE INDEX IF NOT EXISTS pushes_due ON pushes (state, next_attempt_at_ms)"]
    }

    /// The tables and indexes of the current schema, as the catalogue lists them.
    static let expectedObjects: Set<String> = RelaySchema.version1Tables.union([
        "pushes_queued_due", "pushes_leased_due",
    ])

    static let latest = RelaySchema.currentVersion

    // MARK: SQLite

    /// `PRAGMA user_version`, `PRAGMA application_id` and the relay's tables and indexes in the file at `path`.
    static func inspectSQLite(_ path: String) throws -> (version: Int64, appID: Int64, objects: Set<String>) {
        let db = try SQLiteConnection(path: path)
        func pragma(_ name: String) throws -> Int64 {
            try db.withStatement("PRAGMA \(name)") { s throws(RelayError) in try s.step() ? s.int64(0) : -1 }
        }
        let objects = try db.withStatement(
            "SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite%'"
        ) { s throws(RelayError) -> Set<String> in
            var names: Set<String> = []
            while try s.step() { names.insert(s.text(0)) }
            return names
        }
        return (try pragma("user_version"), try pragma("application_id"), objects)
    }

    static func withSQLiteStore(_ path: String, _ body: (SQLiteRelayStore) async throws -> Void) async throws {
        let store = try SQLiteRelayStore(path: path)
        do {
            try await body(store)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    @Test("SQLite: a fresh database ends at the latest version with the tables and indexes, marked as the relay's")
    func sqliteFresh() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("relay.sqlite")
        try await Self.withSQLiteStore(path) { store in
            try await store.migrate()
            try await store.migrate()  // a current database: nothing to do
            try await RelayStoreContractTests.seed(store, pushes: 1)
        }
        let found = try Self.inspectSQLite(path)
        #expect(found.version == Self.latest && found.appID == RelaySchema.applicationID)
        #expect(found.objects == Self.expectedObjects)
    }

    @Test(
        "SQLite: a database made before versions were recorded keeps its rows and ends at the latest version",
        arguments: [true, false]
    )
    func sqliteLegacy(withFailedReason: Bool) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("relay.sqlite")
        do {
            let db = try SQLiteConnection(path: path)
            for statement in Self.legacySQLite(withFailedReason: withFailedReason) { try db.execute(statement) }
            try db.execute("INSERT INTO lists VALUES ('old', x'07', 4, x'01', x'7b7d', 0)")
        }
        #expect(try Self.inspectSQLite(path).version == 0)
        // Rows written on the old schema (the store's statements for lists and devices are the same; the queue's
        // rows as the relay of then wrote them; the store holds the file's lock while open), then the migration.
        if withFailedReason { try await Self.seedLegacySQLite(path, pushes: 3) }
        try await Self.withSQLiteStore(path) { store in
            try await store.migrate()
            if !withFailedReason { try await RelayStoreContractTests.seed(store, pushes: 3) }
            let leased = try await Self.expectSeeded(store)
            if withFailedReason { #expect(leased.allSatisfy { $0.envelope == Self.legacyPush.envelope }) }
        }
        let found = try Self.inspectSQLite(path)
        #expect(found.version == Self.latest && found.appID == RelaySchema.applicationID)
        #expect(found.objects == Self.expectedObjects)
    }

    /// User "u" of ``RelayStoreContractTests/seed(_:pushes:registering:)`` and ``legacyPushes(_:blob:)`` in the unmigrated SQLite
    /// file at `path`.
    static func seedLegacySQLite(_ path: String, pushes: Int) async throws {
        let db = try SQLiteConnection(path: path)
        for statement in Self.legacySeed(blob: Self.sqliteBlob) + Self.legacyPushes(pushes, blob: Self.sqliteBlob) {
            try db.execute(statement)
        }
    }

    @Test("SQLite: a version-1 database's queued pushes hold their envelopes at version 2 and are delivered")
    func sqliteVersion1QueuedPushes() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("relay.sqlite")
        do {
            let db = try SQLiteConnection(path: path)
            for statement in Self.legacySQLite() { try db.execute(statement) }
            try db.execute("PRAGMA application_id = \(RelaySchema.applicationID)")
            try db.execute("PRAGMA user_version = 1")
        }
        try await Self.seedLegacySQLite(path, pushes: 2)
        try await Self.withSQLiteStore(path) { store in
            try await store.migrate()
            try await Self.expectDeliveredAsEnvelopes(store, count: 2)
        }
        #expect(try Self.inspectSQLite(path).version == Self.latest)
    }

    @Test("SQLite: a version-2 database's APNs addresses become apns '<topic>/<token>' at version 3, rows kept")
    func sqliteVersion2Addresses() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("relay.sqlite")
        do {
            let db = try SQLiteConnection(path: path)
            for statement in Self.legacySQLite() + Self.version2Statements { try db.execute(statement) }
            try db.execute("PRAGMA application_id = \(RelaySchema.applicationID)")
            try db.execute("PRAGMA user_version = 2")
        }
        do {
            let db = try SQLiteConnection(path: path)
            for statement in Self.legacySeed(blob: Self.sqliteBlob, registered: false)
                + Self.version2Rows(blob: Self.sqliteBlob)
            {
                try db.execute(statement)
            }
        }
        try await Self.withSQLiteStore(path) { store in
            try await store.migrate()
            try await Self.expectVersion2Converted(store)
        }
        let found = try Self.inspectSQLite(path)
        #expect(found.version == Self.latest && found.objects == Self.expectedObjects)
    }

    @Test("SQLite: a database of a newer relay is refused at start, saying to run that relay, and left unchanged")
    func sqliteNewer() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("relay.sqlite")
        try await Self.withSQLiteStore(path) { try await $0.migrate() }
        do {
            let db = try SQLiteConnection(path: path)
            try db.execute("PRAGMA user_version = \(Self.latest + 1)")
        }
        try await Self.withSQLiteStore(path) { store in
            let error = await #expect(throws: RelayError.self) { try await store.migrate() }
            #expect(error?.code == .storageUnavailable)
            #expect(
                error?.message
                    == "the SQLite database \(path) has relay schema version \(Self.latest + 1) but this relay knows "
                    + "versions up to \(Self.latest): a newer relay has migrated it; run that relay version (or a "
                    + "newer one) on this database, or point this relay at another database"
            )
        }
        #expect(try Self.inspectSQLite(path).version == Self.latest + 1)
    }

    @Test(
        "SQLite: another application's database is refused and left unchanged",
        arguments: ["PRAGMA application_id = 1", "PRAGMA user_version = 3", "CREATE TABLE notes (id INTEGER)"]
    )
    func sqliteForeign(marking: String) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("other.sqlite")
        do {
            let db = try SQLiteConnection(path: path)
            try db.execute("CREATE TABLE lists (id INTEGER)")
            try db.execute(marking)
        }
        let before = try Self.inspectSQLite(path)
        try await Self.withSQLiteStore(path) { store in
            let error = await #expect(throws: RelayError.self) { try await store.migrate() }
            #expect(error?.code == .storageUnavailable)
            #expect(error?.message.hasPrefix("\(path) is an SQLite database of another application (") == true)
        }
        let after = try Self.inspectSQLite(path)
        #expect(after.version == before.version && after.appID == before.appID && after.objects == before.objects)
    }

    // MARK: PostgreSQL

    static func withPostgres(_ body: (PostgresRelayStore) async throws -> Void) async throws {
        try await PostgresTestServer.withStore(url: try await PostgresTestServer.freshDatabaseURL()) { store in
            try await body(store)
        }
    }

    /// The relay's tables and indexes in the store's database.
    static func postgresObjects(_ store: PostgresRelayStore) async throws -> Set<String> {
        var names: Set<String> = []
        for name in Self.expectedObjects.union(["pushes_due", "pushes_queued", "pushes_leased"]) {
            let found = try await store.int64ForTesting("SELECT count(*) FROM pg_class WHERE relname = '\(name)'")
            if found == 1 { names.insert(name) }
        }
        return names
    }

    static func postgresVersion(_ store: PostgresRelayStore) async throws -> Int64? {
        try await store.int64ForTesting("SELECT max(version) FROM relay_schema")
    }

    @Test(
        "PostgreSQL: a fresh database ends at the latest version with the tables and indexes",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func postgresFresh() async throws {
        try await Self.withPostgres { store in
            try await store.migrate()
            try await store.migrate()  // a current database: nothing to do
            #expect(try await Self.postgresVersion(store) == Self.latest)
            #expect(try await store.int64ForTesting("SELECT count(*) FROM relay_schema") == Self.latest)
            #expect(try await Self.postgresObjects(store) == Self.expectedObjects)
            try await RelayStoreContractTests.seed(store, pushes: 1)
        }
    }

    @Test(
        "PostgreSQL: a database made before versions were recorded keeps its rows and ends at the latest version",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote),
        arguments: [true, false]
    )
    func postgresLegacy(withFailedReason: Bool) async throws {
        try await Self.withPostgres { store in
            for statement in Self.legacyPostgres(withFailedReason: withFailedReason) {
                try await store.executeForTesting(statement)
            }
            try await store.executeForTesting("INSERT INTO lists VALUES ('old', '\\x07', 4, '\\x01', '\\x7b7d', 0)")
            if withFailedReason {
                for statement in Self.legacySeed(blob: Self.postgresBlob)
                    + Self.legacyPushes(3, blob: Self.postgresBlob)
                {
                    try await store.executeForTesting(statement)
                }
            }
            try await store.migrate()
            if !withFailedReason { try await RelayStoreContractTests.seed(store, pushes: 3) }
            let leased = try await Self.expectSeeded(store)
            if withFailedReason { #expect(leased.allSatisfy { $0.envelope == Self.legacyPush.envelope }) }
            #expect(try await Self.postgresVersion(store) == Self.latest)
            #expect(try await Self.postgresObjects(store) == Self.expectedObjects)
        }
    }

    @Test(
        "PostgreSQL: a database of a newer relay is refused at start, saying to run that relay",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func postgresNewer() async throws {
        try await Self.withPostgres { store in
            try await store.migrate()
            try await store.executeForTesting("INSERT INTO relay_schema (version) VALUES (\(Self.latest + 1))")
            let error = await #expect(throws: RelayError.self) { try await store.migrate() }
            #expect(error?.code == .storageUnavailable)
            #expect(
                error?.message.hasSuffix(
                    " has relay schema version \(Self.latest + 1) but this relay knows versions up to \(Self.latest): "
                        + "a newer relay has migrated it; run that relay version (or a newer one) on this database, "
                        + "or point this relay at another database"
                ) == true
            )
            #expect(error?.message.hasPrefix("PostgreSQL at ") == true)
            #expect(try await Self.postgresVersion(store) == Self.latest + 1)
        }
    }

    @Test(
        "PostgreSQL: a version-1 database's queued pushes hold their envelopes at version 2 and are delivered",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func postgresVersion1QueuedPushes() async throws {
        try await Self.withPostgres { store in
            for statement in Self.legacyPostgres() { try await store.executeForTesting(statement) }
            try await store.executeForTesting(
                "CREATE TABLE relay_schema (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            try await store.executeForTesting("INSERT INTO relay_schema (version) VALUES (1)")
            for statement in Self.legacySeed(blob: Self.postgresBlob) + Self.legacyPushes(2, blob: Self.postgresBlob) {
                try await store.executeForTesting(statement)
            }
            try await store.migrate()
            #expect(try await Self.postgresVersion(store) == Self.latest)
            try await Self.expectDeliveredAsEnvelopes(store, count: 2)
        }
    }

    @Test(
        "PostgreSQL: a version-2 database's APNs addresses become apns '<topic>/<token>' at version 3, rows kept",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func postgresVersion2Addresses() async throws {
        try await Self.withPostgres { store in
            for statement in Self.legacyPostgres() + Self.version2Statements {
                try await store.executeForTesting(statement)
            }
            try await store.executeForTesting(
                "CREATE TABLE relay_schema (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            try await store.executeForTesting("INSERT INTO relay_schema (version) VALUES (1), (2)")
            for statement in Self.legacySeed(blob: Self.postgresBlob, registered: false)
                + Self.version2Rows(blob: Self.postgresBlob)
            {
                try await store.executeForTesting(statement)
            }
            try await store.migrate()
            #expect(try await Self.postgresVersion(store) == Self.latest)
            try await Self.expectVersion2Converted(store)
        }
    }

    // MARK: shared

    /// User "u" of ``RelayStoreContractTests/seed(_:pushes:registering:)`` (its list, devices "a" and "b") as the
    /// relay of versions 1 and 2 wrote it, the push addresses (when `registered`) in the APNs columns. Written in
    /// SQL: the store of this version reads and writes the columns of the latest version only.
    static func legacySeed(blob: ([UInt8]) -> String, registered: Bool = true) -> [String] {
        let list = RelayStoreContractTests.list(version: 1, devices: ["a", "b"])
        let listRow = """
            INSERT INTO lists (user_id, user_signing_key, list_version, list_digest, list_json, updated_at_ms)
            VALUES ('u', \(blob(list.userSigningKey)), 1, \(blob(list.digest)), \(blob(list.json)), 0)
            """
        let deviceRows = list.devices.enumerated().map { position, device in
            let token = registered ? "'\(TestUser.token(device.deviceID))'" : "NULL"
            let topic = registered ? "'com.example.app'" : "NULL"
            let environment = registered ? "'development'" : "NULL"
            return """
                INSERT INTO devices (user_id, device_id, position, signing_key, device_token, topic, environment,
                  registered_at_ms)
                VALUES ('u', '\(device.deviceID)', \(position), \(blob(device.signingKey)), \(token), \(topic),
                  \(environment), 0)
                """
        }
        return [listRow] + deviceRows
    }

    /// What version 2 changed on the legacy schema.
    static let version2Statements = ["ALTER TABLE pushes RENAME COLUMN body TO envelope"]

    /// Rows as a relay of version 2 wrote them for user "u" of ``RelayStoreContractTests/seed(_:pushes:registering:)``:
    /// device "a" registered in APNs' columns (token in `device_token`, bundle id in `topic`), device "b" not
    /// registered, one queued push to "a" and one delivered push with its APNs status and reason.
    static func version2Rows(blob: ([UInt8]) -> String) -> [String] {
        let token = TestUser.token("a")
        return [
            """
            UPDATE devices SET device_token = '\(token)', topic = 'com.example.app', environment = 'development',
              registered_at_ms = 0 WHERE user_id = 'u' AND device_id = 'a'
            """,
            """
            INSERT INTO pushes (push_id, user_id, device_id, envelope, state, attempts, next_attempt_at_ms,
              enqueued_at_ms, completions)
            VALUES ('v2-queued', 'u', 'a', \(blob(Self.legacyPush.envelope)), 'queued', 0, 0, 0, 0)
            """,
            """
            INSERT INTO pushes (push_id, user_id, device_id, envelope, state, attempts, next_attempt_at_ms,
              enqueued_at_ms, completed_at_ms, apns_status, apns_reason, completions)
            VALUES ('v2-done', 'u', 'a', NULL, 'failed', 1, 0, 0, 0, 400, 'BadPriority', 1)
            """,
        ]
    }

    /// After the migration to version 3: "a"'s address is apns `<topic>/<token>` in its environment, "b" has none,
    /// the queued push leases with the converted address, and the completed push keeps its status and reason.
    static func expectVersion2Converted(_ store: any RelayStore) async throws {
        let devices = try await store.devices(userID: "u")
        #expect(devices.map(\.deviceID) == ["a", "b"])
        #expect(devices[0].address == TestUser.address("a"))
        #expect(
            devices[0].address?.push == PushAddress(service: .apns, address: "com.example.app/" + TestUser.token("a"))
        )
        #expect(devices[0].address?.environment == "development")
        #expect(devices[1].address == nil)
        let leased = try await store.lease(owner: "w", limit: 10, nowMs: 1, leaseMs: 100)
        #expect(leased.map(\.pushID) == ["v2-queued"])
        #expect(leased.first?.address == TestUser.address("a"))
        #expect(leased.first?.envelope == Self.legacyPush.envelope)
        let done = try #require(try await store.push("v2-done"))
        #expect(done.state == .failed && done.serviceStatus == 400 && done.serviceReason == "BadPriority")
    }

    /// A sealed push's envelope, and the APNs body the relay of version 1 queued for it.
    static let legacyPush: (envelope: [UInt8], body: [UInt8]) = {
        let user = try! TestUser.make("legacy", devices: ["phone"])
        let sealed = try! user.sealText(from: user.devices[0], to: "phone")
        return (sealed.envelope.serialized, sealed.apnsBody)
    }()

    static let sqliteBlob: @Sendable ([UInt8]) -> String = { "x'\(Hex.encode($0))'" }
    static let postgresBlob: @Sendable ([UInt8]) -> String = { "'\\x\(Hex.encode($0))'" }

    /// The queue's rows as the relay of version 1 wrote them, for user "u" of
    /// ``RelayStoreContractTests/seed(_:pushes:registering:)``: `count` queued pushes holding ``legacyPush``'s APNs body, and
    /// one delivered push, its body cleared.
    static func legacyPushes(_ count: Int, blob: ([UInt8]) -> String) -> [String] {
        (0..<count).map { index in
            """
            INSERT INTO pushes (push_id, user_id, device_id, body, state, attempts, next_attempt_at_ms,
              enqueued_at_ms, completions)
            VALUES ('legacy-\(index)', 'u', '\(index % 2 == 0 ? "a" : "b")', \(blob(Self.legacyPush.body)), 'queued',
              0, 0, 0, 0)
            """
        } + [
            """
            INSERT INTO pushes (push_id, user_id, device_id, body, state, attempts, next_attempt_at_ms,
              enqueued_at_ms, completed_at_ms, apns_status, completions)
            VALUES ('legacy-done', 'u', 'a', NULL, 'delivered', 1, 0, 0, 0, 200, 1)
            """
        ]
    }

    /// Delivers the queue through a recording deliverer: `count` pushes, each given as ``legacyPush``'s envelope
    /// (which frames again into the very body version 1 queued), each then delivered.
    static func expectDeliveredAsEnvelopes(_ store: any RelayStore, count: Int) async throws {
        let deliverer = RecordingDeliverer { _ in
            DeliveryReport(outcome: .delivered, status: 200, label: "200", signal: .answered)
        }
        let delivery = RelayDelivererTests.service(store, deliverer)
        #expect(await delivery.runOnce() == count)
        let given = deliverer.deliveries
        #expect(given.map(\.pushID).sorted() == (0..<count).map { "legacy-\($0)" })
        for push in given {
            #expect(push.envelope == Self.legacyPush.envelope)
            let envelope = try Envelope(parsing: push.envelope, padding: APNsAlertTransport.padding)
            #expect(APNsAlertTransport.body(for: envelope) == Self.legacyPush.body)
            #expect(try await store.push(push.pushID)?.state == .delivered)
        }
        #expect(try await store.push("legacy-done")?.state == .delivered)
    }

    /// The legacy fixture's row of user "old" and the rows ``RelayStoreContractTests/seed(_:pushes:registering:)`` wrote with 3
    /// pushes are all there.
    @discardableResult
    static func expectSeeded(_ store: any RelayStore) async throws -> [LeasedPush] {
        let old = try #require(try await store.list(userID: "old"))
        #expect(old.listVersion == 4 && old.userSigningKey == [7] && old.digest == [1] && old.json == Array("{}".utf8))
        #expect(try await store.list(userID: "u")?.listVersion == 1)
        #expect(try await store.devices(userID: "u").map(\.deviceID).sorted() == ["a", "b"])
        #expect(try await store.counts()[.queued] == 3)
        let leased = try await store.lease(owner: "w", limit: 10, nowMs: 1, leaseMs: 100)
        #expect(leased.count == 3)
        return leased
    }
}
