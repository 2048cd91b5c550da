import E2EECore
import Foundation
import Locking
public import Logging
import NIOCore
import PostgresNIO
public import RelayClient
import ServiceLifecycle

/// The shared store: several relay instances on one PostgreSQL database.
///
/// The queue hands each due push to one instance: ``lease(owner:limit:nowMs:leaseMs:)`` selects rows with
/// `FOR UPDATE SKIP LOCKED` and marks them leased in the same transaction, so two instances never lease one row
/// while its lease holds; a killed instance's rows become due again when their lease expires.
///
/// **Group commit.** Submits that arrive while the instance's previous group is at the server are enqueued
/// together by one statement (one round trip, one commit), as the embedded store does in one transaction. A reused
/// idempotency key is refused for its submit alone; a statement the server refuses stores nothing of any submit of
/// the group, and each gets the error.
///
/// A store works while its connection pool runs: within ``withStore(url:operationTimeout:logger:_:)``, or in the
/// relay's `ServiceGroup` (``buildApplication(_:logger:)``).
public final class PostgresRelayStore: RelayStore {
    private let client: PostgresClient
    private let logger: Logger
    /// `host:port/database`, for messages (never the password).
    public let endpoint: String
    /// The most one operation may take, waiting for a connection included. While the server is down the pool
    /// keeps requests waiting for up to a minute before it fails them; an API answer must come sooner (503), and a
    /// client's request timeout is 10 s.
    let operationTimeout: Duration
    /// The `storage-full` error of the last write, when the server refused it for lack of space (SQLSTATE 53100);
    /// nil again once a write succeeds. The health endpoint answers 503 `storage-full` meanwhile.
    private let lastWriteNoRoom = PThreadMutex<RelayError?>(nil)
    /// Submits' context reads waiting to be read together (``submitContext(userID:tokenHash:)``): under load, one
    /// round trip for the submits that arrived during the previous one, not one each.
    private let contextReads = GroupCommit<ContextRequest, Result<SubmitContext, RelayError>>(
        maxGroup: PostgresRelayStore.maxEnqueueGroup
    )
    /// Submits waiting to be enqueued together (``enqueue(_:nowMs:)``).
    private let enqueues = GroupCommit<PendingSubmit, Result<EnqueueOutcome, RelayError>>(
        maxGroup: PostgresRelayStore.maxEnqueueGroup
    )

    private init(
        client: PostgresClient,
        logger: Logger,
        endpoint: String,
        operationTimeout: Duration
    ) {
        self.client = client
        self.logger = logger
        self.endpoint = endpoint
        self.operationTimeout = operationTimeout
    }

    /// Runs `body` with a store connected to `url` (`postgres://user[:password]@host[:port]/database`), once the
    /// server answers. The store's connection pool runs beside `body` and is closed before this returns.
    ///
    /// - Throws: `configuration` for a bad URL, `storage-unavailable` when the server does not answer; else what
    ///   `body` throws.
    public static func withStore<T>(
        url: String,
        operationTimeout: Duration = .seconds(5),
        logger: Logger,
        _ body: (PostgresRelayStore) async throws -> T
    ) async throws -> T {
        let store = try await Self.connect(url: url, operationTimeout: operationTimeout, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.client.run() }
            // Cancelling the pool closes its connections; the group waits for that before it returns.
            defer { group.cancelAll() }
            try await store.waitUntilAnswering()
            return try await body(store)
        }
    }

    /// A store on `url` whose connection pool is not running yet: run ``clientService`` (in the relay's
    /// `ServiceGroup`), then ``waitUntilAnswering()`` before the first operation.
    ///
    /// - Throws: `configuration` for a bad URL, `storage-unavailable` when one direct connection fails.
    static func connect(
        url: String,
        operationTimeout: Duration = .seconds(5),
        logger: Logger
    ) async throws(RelayError) -> PostgresRelayStore {
        guard let parsed = URL(string: url), ["postgres", "postgresql"].contains(parsed.scheme ?? ""),
            let host = parsed.host, !host.isEmpty, let user = parsed.user, !user.isEmpty
        else {
            throw RelayError(
                .configuration,
                "the database URL must look like postgres://user[:password]@host[:port]/database"
            )
        }
        let database = parsed.path.hasPrefix("/") ? String(parsed.path.dropFirst()) : parsed.path
        let port = parsed.port ?? 5432
        var configuration = PostgresClient.Configuration(
            host: host,
            port: port,
            username: user,
            password: parsed.password,
            database: database.isEmpty ? nil : database,
            tls: .disable
        )
        configuration.options.maximumConnections = 8
        let endpoint = "\(host):\(port)/\(database)"
        // One direct connection first: a refused port, an unknown user or database fails now, with the server's
        // own reason, instead of after the pool's retries.
        try await Self.probe(
            PostgresConnection.Configuration(
                host: host,
                port: port,
                username: user,
                password: parsed.password,
                database: database.isEmpty ? nil : database,
                tls: .disable
            ),
            endpoint: endpoint,
            logger: logger
        )
        return PostgresRelayStore(
            client: PostgresClient(configuration: configuration, backgroundLogger: logger),
            logger: logger,
            endpoint: endpoint,
            operationTimeout: operationTimeout
        )
    }

    /// The connection pool as a `Service`: it runs until graceful shutdown, then closes its connections.
    var clientService: any Service { self.client }

    /// Returns once a pooled connection answers; throws `storage-unavailable` after ten seconds, or after
    /// ``operationTimeout`` when that is longer.
    func waitUntilAnswering() async throws(RelayError) {
        // The pool retries a refused connection for about a minute; at start, ten seconds say enough. Pings are
        // tried again within them: each is bounded by `operationTimeout`, which a loaded server's first pooled
        // connection can take longer than. A store given a longer operation timeout waits as long for the first
        // answer (one operation may take that long, so may the first).
        let window = max(Duration.seconds(10), self.operationTimeout)
        let answered = await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    if (try? await self.ping()) != nil { return true }
                    try? await Task.sleep(for: .milliseconds(100))
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: window)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard answered == true else {
            throw RelayError(
                .storageUnavailable,
                "PostgreSQL at \(self.endpoint) does not answer: check that it runs, listens there, and that the URL's "
                    + "user and database exist"
            )
        }
    }

    /// Opens and closes one connection; throws `storage-unavailable` with the reason it failed.
    private static func probe(
        _ configuration: PostgresConnection.Configuration,
        endpoint: String,
        logger: Logger
    ) async throws(RelayError) {
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try? await connection.close()
        } catch {
            throw RelayError(
                .storageUnavailable,
                "PostgreSQL at \(endpoint) cannot be reached: \(Self.detail(error)); check that the server runs and "
                    + "listens there, and that the URL's user and database exist, then start e2ee-relay again"
            )
        }
    }

    /// What went wrong, without the password: the server's message, or the connection's error.
    private static func detail(_ error: any Error) -> String {
        if let psql = error as? PSQLError {
            if let message = psql.serverInfo?[.message] { return message }
            if let underlying = psql.underlying { return "\(underlying)" }
            return "\(psql.code)"
        }
        return "\(error)"
    }

    /// Creates database `name` on the server of `url` (tests give each run its own database).
    static func createDatabase(
        _ name: String,
        url: String,
        operationTimeout: Duration = .seconds(5),
        logger: Logger
    ) async throws {
        try await Self.withStore(url: url, operationTimeout: operationTimeout, logger: logger) { store in
            _ = try await store.read("create database") { connection in
                _ = try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \"\(name)\""), logger: logger)
                return true
            }
        }
    }

    // MARK: plumbing

    private func failure(_ error: any Error, _ operation: String) -> RelayError {
        if let relay = error as? RelayError { return relay }
        if let psql = error as? PSQLError, psql.serverInfo?[.sqlState] == Self.diskFull {
            let full = RelayError(
                .storageFull,
                "PostgreSQL at \(self.endpoint) has no room on its disk (\(Self.detail(error))) during \(operation): "
                    + "nothing of this request was stored; free space on the database server's disk and send again "
                    + "later. Pushes already accepted stay queued and are delivered once the database can write again",
                retryAfterSeconds: 30
            )
            self.lastWriteNoRoom.withLock { $0 = full }
            return full
        }
        if let transaction = error as? PostgresTransactionError {
            // A decision made inside the transaction (a refusal) is the answer; the rollback is the mechanism.
            if let relay = transaction.closureError as? RelayError { return relay }
            if let inner = transaction.closureError ?? transaction.beginError ?? transaction.commitError {
                return self.failure(inner, operation)
            }
        }
        return RelayError(
            .storageUnavailable,
            "PostgreSQL at \(self.endpoint) failed during \(operation): \(Self.detail(error)); send the request "
                + "again (a submit with the same Idempotency-Key: one that did reach the database is answered as a "
                + "duplicate); pushes already accepted stay queued, the relay reconnects by itself",
            retryAfterSeconds: 1
        )
    }

    /// SQLSTATE `disk_full`.
    static let diskFull = "53100"

    /// How long ``migrate()`` may take: it waits for any other instance's migration (an advisory lock) and runs DDL,
    /// which a busy server may take longer than one request's ``operationTimeout`` to commit. It runs once, at start.
    static let migrationTimeout: Duration = .seconds(60)

    /// The answer when the database does not answer within `timeout` (server down, network cut).
    private func timedOut(_ operation: String, _ timeout: Duration) -> RelayError {
        RelayError(
            .storageUnavailable,
            "PostgreSQL at \(self.endpoint) did not answer within \(timeout) during \(operation); send "
                + "the request again (a submit with the same Idempotency-Key: one that did reach the database is "
                + "answered as a duplicate); pushes already accepted stay queued, the relay reconnects by itself",
            retryAfterSeconds: 1
        )
    }

    /// Runs `body` within `timeout` (default ``operationTimeout``); on timeout it is cancelled (a wait for a
    /// connection ends at once). The error names `reportedTimeout` when given: the bound the request had in all
    /// (a submit's, when part of it went on waiting for an earlier group).
    private func bounded<T: Sendable>(
        _ operation: String,
        timeout: Duration? = nil,
        reportedTimeout: Duration? = nil,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws(RelayError) -> T {
        let timeout = timeout ?? self.operationTimeout
        switch await Self.race(body, timeout: timeout) {
        case .success(let value): return value
        case .failure(let error): throw self.failure(error, operation)
        case nil: throw self.timedOut(operation, reportedTimeout ?? timeout)
        }
    }

    /// `body`'s result, or nil once `timeout` has passed, whichever comes first.
    ///
    /// The answer does not wait for `body` past the timeout: a statement the server has not ended does not end
    /// when its task is cancelled (postgres-nio waits for the server's answer), so a hung statement would hold the
    /// request for as long as the server takes. Past the timeout, `body`'s task is cancelled and left to end on its
    /// own; its connection goes back to the pool when the server answers or the connection closes. Cancelling the
    /// caller cancels `body` and answers at once.
    static func race<T: Sendable>(
        _ body: @escaping @Sendable () async throws -> T,
        timeout: Duration
    ) async -> Result<T, any Error>? {
        let waiter = PThreadMutex<CheckedContinuation<Result<T, any Error>?, Never>?>(nil)
        let finish: @Sendable (Result<T, any Error>?) -> Void = { result in
            waiter.withLock { $0.take() }?.resume(returning: result)
        }
        let tasks = PThreadMutex(RaceTasks())
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiter.withLock { $0 = continuation }
                let work = Task {
                    let result: Result<T, any Error>
                    do { result = .success(try await body()) } catch { result = .failure(error) }
                    finish(result)
                    tasks.withLock { state -> Task<Void, Never>? in
                        state.done = true
                        return state.timer.take()
                    }?.cancel()
                }
                let timer = Task {
                    try? await Task.sleep(for: timeout)
                    guard !Task.isCancelled else { return }
                    finish(nil)
                    work.cancel()
                }
                let finished = tasks.withLock { state -> Bool in
                    state.work = work
                    if !state.done { state.timer = timer }
                    return state.done
                }
                if finished { timer.cancel() }
            }
        } onCancel: {
            tasks.withLock { $0.work }?.cancel()
            finish(.failure(CancellationError()))
        }
    }

    /// The two tasks of a ``race(_:timeout:)``.
    private struct RaceTasks: Sendable {
        var work: Task<Void, Never>?
        var timer: Task<Void, Never>?
        /// `work` has ended.
        var done = false
    }

    private func transaction<T: Sendable>(
        _ operation: String,
        timeout: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(RelayError) -> T {
        let client = self.client
        let logger = self.logger
        let value = try await self.bounded(operation, timeout: timeout) {
            try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        }
        self.lastWriteNoRoom.withLock { $0 = nil }
        return value
    }

    /// A write that is one statement: PostgreSQL runs a statement outside `BEGIN` as a transaction of its own (all
    /// or nothing, committed as `COMMIT` would), so this costs one round trip where ``transaction(_:timeout:_:)``
    /// costs three.
    private func statement<T: Sendable>(
        _ operation: String,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(RelayError) -> T {
        let value = try await self.read(operation, body)
        self.lastWriteNoRoom.withLock { $0 = nil }
        return value
    }

    /// - Parameter timeout: the bound of this statement when not ``operationTimeout`` (a group's submits have
    ///   already waited part of theirs).
    private func read<T: Sendable>(
        _ operation: String,
        timeout: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(RelayError) -> T {
        let client = self.client
        let reported = timeout == nil ? nil : self.operationTimeout
        return try await self.bounded(operation, timeout: timeout, reportedTimeout: reported) {
            try await client.withConnection { connection in try await body(connection) }
        }
    }

    private static func bytes(_ buffer: ByteBuffer?) -> [UInt8] {
        guard var buffer else { return [] }
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    // MARK: RelayStore

    /// Brings the database to ``RelaySchema/currentVersion``: each missing migration in a transaction of its own,
    /// under the advisory lock (instances starting together wait for each other's migration, then find it done),
    /// which also records its version as a row of `relay_schema`. A database made before versions were recorded (no
    /// `relay_schema`) is adopted by version 1.
    ///
    /// - Throws: `storage-unavailable` (the relay exits 69) for a schema version newer than this build knows, with
    ///   what to do; or the database's failure.
    public func migrate() async throws(RelayError) {
        let logger = self.logger
        let timeout = max(Self.migrationTimeout, self.operationTimeout)
        let database = "PostgreSQL at \(self.endpoint)"
        while true {
            let migrated = try await self.transaction("migrate", timeout: timeout) { connection in
                // Instances starting together must not race on the schema.
                try await connection.query("SELECT pg_advisory_xact_lock(7270011)", logger: logger)
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS relay_schema (version BIGINT PRIMARY KEY,
                      applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                    """,
                    logger: logger
                )
                var version: Int64 = 0
                let rows = try await connection.query(
                    "SELECT COALESCE(max(version), 0) FROM relay_schema",
                    logger: logger
                )
                for try await value in rows.decode(Int64.self) { version = value }
                guard let migration = try RelaySchema.migration(after: version, database: database) else {
                    return false
                }
                for statement in migration.statements(.postgres) {
                    let sql: String
                    switch statement {
                    case .sql(let text):
                        sql = text
                    case .addColumnIfMissing(let table, let column, let definition):
                        sql = "ALTER TABLE \(table) ADD COLUMN IF NOT EXISTS \(column) \(definition)"
                    case .unframeQueuedAPNsBodies:
                        try await Self.unframeQueuedAPNsBodies(connection, logger: logger)
                        continue
                    }
                    try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO relay_schema (version) VALUES (\(migration.version))",
                    logger: logger
                )
                return true
            }
            if !migrated { return }
        }
    }

    /// ``RelaySchema/Statement/unframeQueuedAPNsBodies``: every stored APNs body replaced by its envelope, in one
    /// statement.
    private static func unframeQueuedAPNsBodies(_ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query(
            "SELECT seq, envelope FROM pushes WHERE envelope IS NOT NULL",
            logger: logger
        )
        var seqs: [Int64] = []
        var envelopes: [ByteBuffer] = []
        for try await (seq, body) in rows.decode((Int64, ByteBuffer).self) {
            guard let envelope = RelaySchema.envelope(fromAPNsBody: Self.bytes(body)) else { continue }
            seqs.append(seq)
            envelopes.append(ByteBuffer(bytes: envelope))
        }
        guard !seqs.isEmpty else { return }
        try await connection.query(
            """
            UPDATE pushes p SET envelope = i.envelope
            FROM unnest(\(seqs)::int8[], \(envelopes)::bytea[]) AS i(seq, envelope)
            WHERE p.seq = i.seq
            """,
            logger: logger
        )
    }

    public func ping() async throws(RelayError) {
        let logger = self.logger
        _ = try await self.read("ping") { connection in
            _ = try await connection.query("SELECT 1", logger: logger)
            return true
        }
        if let noRoom = self.lastWriteNoRoom.withLock({ $0 }) { throw noRoom }
    }

    #if DEBUG
    /// Runs `sql` as one statement (tests: a trigger that refuses writes as a full disk does).
    func executeForTesting(_ sql: String) async throws(RelayError) {
        let logger = self.logger
        _ = try await self.read("test statement") { connection in
            _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
            return true
        }
    }

    /// The first column of the first row of `sql`, an integer (tests: the recorded schema version).
    func int64ForTesting(_ sql: String) async throws(RelayError) -> Int64? {
        let logger = self.logger
        return try await self.read("test query") { connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
            var values: [Int64] = []
            for try await value in rows.decode(Int64.self) { values.append(value) }
            return values.first
        }
    }
    #endif

    public func list(userID: String) async throws(RelayError) -> StoredList? {
        let logger = self.logger
        return try await self.read("list") { connection in try await Self.list(connection, userID, logger, lock: false)
        }
    }

    private static func list(
        _ connection: PostgresConnection,
        _ userID: String,
        _ logger: Logger,
        lock: Bool
    )
        async throws -> StoredList?
    {
        let rows =
            lock
            ? try await connection.query(
                "SELECT user_signing_key, list_version, list_digest, list_json FROM lists WHERE user_id = \(userID) FOR UPDATE",
                logger: logger
            )
            : try await connection.query(
                "SELECT user_signing_key, list_version, list_digest, list_json FROM lists WHERE user_id = \(userID)",
                logger: logger
            )
        for try await (key, version, digest, json) in rows.decode((ByteBuffer, Int64, ByteBuffer, ByteBuffer).self) {
            return StoredList(
                userID: userID,
                userSigningKey: Self.bytes(key),
                listVersion: UInt64(version),
                digest: Self.bytes(digest),
                json: Self.bytes(json)
            )
        }
        return nil
    }

    public func publish(_ list: NewList, nowMs: Int64) async throws(RelayError) -> Bool {
        let logger = self.logger
        let devices = list.devices.map { Device(deviceID: $0.deviceID, signingKey: $0.signingKey) }
        return try await self.transaction("publish") { connection in
            // Serialise publishes of one user (first publishes too: the advisory lock covers a missing row).
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(list.userID)))", logger: logger)
            if let stored = try await Self.list(connection, list.userID, logger, lock: true) {
                guard try StorePolicy.admit(list, over: stored) else { return false }
            }
            try await connection.query(
                """
                INSERT INTO lists (user_id, user_signing_key, list_version, list_digest, list_json, updated_at_ms)
                VALUES (\(list.userID), \(ByteBuffer(bytes: list.userSigningKey)), \(Int64(list.listVersion)),
                  \(ByteBuffer(bytes: list.digest)), \(ByteBuffer(bytes: list.json)), \(nowMs))
                ON CONFLICT (user_id) DO UPDATE SET user_signing_key = excluded.user_signing_key,
                  list_version = excluded.list_version, list_digest = excluded.list_digest,
                  list_json = excluded.list_json, updated_at_ms = excluded.updated_at_ms
                """,
                logger: logger
            )
            let existing = try await Self.devices(connection, list.userID, logger)
            let kept = Set(devices.map(\.deviceID))
            for device in existing where !kept.contains(device.deviceID) {
                try await Self.removeDevice(connection, list.userID, device.deviceID, nowMs, logger)
            }
            for (position, device) in devices.enumerated() {
                if let previous = existing.first(where: { $0.deviceID == device.deviceID }),
                    previous.signingKey != device.signingKey
                {
                    try await Self.removeDevice(connection, list.userID, device.deviceID, nowMs, logger)
                }
                try await connection.query(
                    """
                    INSERT INTO devices (user_id, device_id, position, signing_key)
                    VALUES (\(list.userID), \(device.deviceID), \(Int64(position)), \(ByteBuffer(bytes: device.signingKey)))
                    ON CONFLICT (user_id, device_id) DO UPDATE SET position = excluded.position
                    """,
                    logger: logger
                )
            }
            return true
        }
    }

    private struct Device: Sendable {
        var deviceID: String
        var signingKey: [UInt8]
    }

    private static func removeDevice(
        _ connection: PostgresConnection,
        _ userID: String,
        _ deviceID: String,
        _ nowMs: Int64,
        _ logger: Logger
    ) async throws {
        try await connection.query(
            "DELETE FROM devices WHERE user_id = \(userID) AND device_id = \(deviceID)",
            logger: logger
        )
        try await connection.query(
            """
            UPDATE pushes SET state = 'removed', envelope = NULL, completed_at_ms = \(nowMs), lease_owner = NULL,
              lease_expires_at_ms = NULL
            WHERE user_id = \(userID) AND device_id = \(deviceID) AND state IN ('queued', 'leased')
            """,
            logger: logger
        )
    }

    public func devices(userID: String) async throws(RelayError) -> [StoredDevice] {
        let logger = self.logger
        return try await self.read("devices") { connection in try await Self.devices(connection, userID, logger) }
    }

    private static func devices(
        _ connection: PostgresConnection,
        _ userID: String,
        _ logger: Logger
    ) async throws
        -> [StoredDevice]
    {
        let rows = try await connection.query(
            """
            SELECT device_id, signing_key, service, address, environment, unregistered_at_ms, failed_reason
            FROM devices WHERE user_id = \(userID) ORDER BY position
            """,
            logger: logger
        )
        var devices: [StoredDevice] = []
        for try await (deviceID, key, service, text, environment, unregistered, failedReason) in rows.decode(
            (String, ByteBuffer, String?, String?, String?, Int64?, String?).self
        ) {
            let address = Self.address(service: service, text: text, environment: environment)
            devices.append(
                StoredDevice(
                    deviceID: deviceID,
                    signingKey: Self.bytes(key),
                    address: address,
                    unregisteredAtMs: unregistered,
                    failedReason: failedReason
                )
            )
        }
        return devices
    }

    public func submitContext(userID: String, tokenHash: [UInt8]?) async throws(RelayError) -> SubmitContext {
        let request = ContextRequest(userID: userID, tokenHash: tokenHash)
        let result = await self.contextReads.submit(request) { [self] group in await self.readContexts(group) }
        return try result.get()
    }

    /// A submit's read of its context, waiting for its group.
    struct ContextRequest: Sendable {
        var userID: String
        var tokenHash: [UInt8]?
        /// When the read reached the store: its answer comes within ``operationTimeout`` of it, the wait for an
        /// earlier group included.
        var arrived = ContinuousClock.now
    }

    /// What one context is read for: requests of the same user with the same token share one row.
    private struct ContextKey: Hashable, Sendable {
        var userID: String
        var tokenHash: [UInt8]?
    }

    /// Reads the contexts of a group of submits in one round trip: the two checks of each user and token, joined
    /// with the user's devices (one row of NULLs when there are none). A read that fails fails each request of the
    /// group with its error.
    private func readContexts(_ group: [ContextRequest]) async -> [Result<SubmitContext, RelayError>] {
        let logger = self.logger
        var keys: [ContextKey] = []
        var position: [ContextKey: Int] = [:]
        for request in group {
            let key = ContextKey(userID: request.userID, tokenHash: request.tokenHash)
            if position[key] == nil {
                position[key] = keys.count
                keys.append(key)
            }
        }
        // The group's read ends within the operation timeout of its oldest request.
        let deadline = (group.map(\.arrived).min() ?? .now) + self.operationTimeout
        let contexts: [SubmitContext]
        do throws(RelayError) {
            contexts = try await self.read("submit-context", timeout: Self.remaining(until: deadline)) {
                [keys] connection in
                try await Self.contexts(keys, connection, logger: logger)
            }
        } catch {
            return group.map { _ in .failure(error) }
        }
        return group.map { request in
            .success(contexts[position[ContextKey(userID: request.userID, tokenHash: request.tokenHash)]!])
        }
    }

    /// The contexts of `keys`, in their order.
    private static func contexts(
        _ keys: [ContextKey],
        _ connection: PostgresConnection,
        logger: Logger
    ) async throws -> [SubmitContext] {
        let users = keys.map(\.userID)
        let hashes = keys.map { ByteBuffer(bytes: $0.tokenHash ?? []) }
        let rows = try await connection.query(
            """
            SELECT w.position, c.has_list, c.token_valid, c.token_count, d.device_id, d.signing_key, d.service,
              d.address, d.environment, d.unregistered_at_ms, d.failed_reason
            FROM unnest(\(users)::text[], \(hashes)::bytea[]) WITH ORDINALITY AS w(user_id, token_sha256, position)
            CROSS JOIN LATERAL (SELECT
              EXISTS (SELECT 1 FROM lists l WHERE l.user_id = w.user_id) AS has_list,
              EXISTS (SELECT 1 FROM delivery_tokens t WHERE t.token_sha256 = w.token_sha256 AND t.user_id = w.user_id)
                AS token_valid,
              (SELECT COUNT(*) FROM delivery_tokens t WHERE t.user_id = w.user_id) AS token_count) c
            LEFT JOIN devices d ON d.user_id = w.user_id
            ORDER BY w.position, d.position
            """,
            logger: logger
        )
        var contexts = keys.map { _ in SubmitContext(hasList: false, tokenIsValid: false, devices: []) }
        for try await (
            position, hasList, tokenValid, tokenCount, deviceID, key, service, text, environment, unregistered, failed
        )
            in rows.decode(
                (Int64, Bool, Bool, Int64, String?, ByteBuffer?, String?, String?, String?, Int64?, String?).self
            )
        {
            let index = Int(position) - 1
            guard keys.indices.contains(index) else {
                throw RelayError(.internalError, "a context row for request \(position) of \(keys.count)")
            }
            contexts[index].hasList = hasList
            contexts[index].tokenIsValid = tokenValid && keys[index].tokenHash != nil
            contexts[index].tokenCount = Int(tokenCount)
            guard hasList, let deviceID, let key else { continue }
            let address = Self.address(service: service, text: text, environment: environment)
            contexts[index].devices.append(
                StoredDevice(
                    deviceID: deviceID,
                    signingKey: Self.bytes(key),
                    address: address,
                    unregisteredAtMs: unregistered,
                    failedReason: failed
                )
            )
        }
        return contexts
    }

    public func consumeNonce(_ nonce: [UInt8], expiresAtMs: Int64, nowMs: Int64) async throws(RelayError) -> Bool {
        let logger = self.logger
        return try await self.transaction("nonce") { connection in
            try await connection.query("DELETE FROM auth_nonces WHERE expires_at_ms <= \(nowMs)", logger: logger)
            let rows = try await connection.query(
                """
                INSERT INTO auth_nonces (nonce, expires_at_ms) VALUES (\(ByteBuffer(bytes: nonce)), \(expiresAtMs))
                ON CONFLICT DO NOTHING RETURNING expires_at_ms
                """,
                logger: logger
            )
            var inserted = false
            for try await _ in rows.decode(Int64.self) { inserted = true }
            return inserted
        }
    }

    public func registerPush(
        userID: String,
        deviceID: String,
        address: RegisteredAddress,
        nowMs: Int64
    )
        async throws(RelayError)
    {
        let logger = self.logger
        let updated = try await self.transaction("register") { connection in
            let rows = try await connection.query(
                """
                UPDATE devices SET service = \(address.push.service.rawValue), address = \(address.push.address),
                  environment = \(address.environment), registered_at_ms = \(nowMs), unregistered_at_ms = NULL,
                  failed_reason = NULL
                WHERE user_id = \(userID) AND device_id = \(deviceID) RETURNING position
                """,
                logger: logger
            )
            var count = 0
            for try await _ in rows.decode(Int64.self) { count += 1 }
            return count
        }
        guard updated == 1 else {
            throw RelayError(.unknownDevice, "device \"\(deviceID)\" is not in the user's stored list")
        }
    }

    public func replaceDeliveryTokens(userID: String, hashes: [[UInt8]], nowMs: Int64) async throws(RelayError) {
        let logger = self.logger
        try await self.transaction("tokens") { connection in
            try await connection.query("DELETE FROM delivery_tokens WHERE user_id = \(userID)", logger: logger)
            for hash in hashes {
                try await connection.query(
                    """
                    INSERT INTO delivery_tokens (token_sha256, user_id, created_at_ms)
                    VALUES (\(ByteBuffer(bytes: hash)), \(userID), \(nowMs))
                    ON CONFLICT (token_sha256) DO UPDATE SET user_id = excluded.user_id
                    """,
                    logger: logger
                )
            }
        }
    }

    public func isDeliveryToken(_ hash: [UInt8], of userID: String) async throws(RelayError) -> Bool {
        let logger = self.logger
        return try await self.read("token") { connection in
            let rows = try await connection.query(
                "SELECT 1 FROM delivery_tokens WHERE token_sha256 = \(ByteBuffer(bytes: hash)) AND user_id = \(userID)",
                logger: logger
            )
            for try await _ in rows.decode(Int32.self) { return true }
            return false
        }
    }

    public func enqueue(_ submit: NewSubmit, nowMs: Int64) async throws(RelayError) -> EnqueueOutcome {
        let result = await self.enqueues.submit(PendingSubmit(submit: submit, nowMs: nowMs)) { [self] group in
            await self.enqueueGroup(group)
        }
        return try result.get()
    }

    /// A submit waiting for its group.
    struct PendingSubmit: Sendable {
        var submit: NewSubmit
        var nowMs: Int64
        /// When the submit reached the store: its answer comes within ``operationTimeout`` of it, the wait for an
        /// earlier group included.
        var arrived = ContinuousClock.now
    }

    /// The most submits one group statement carries: the submits a relay instance has in flight under load (64).
    static let maxEnqueueGroup = 64

    /// Enqueues a group of submits with one statement (one round trip, one commit), plus one read of the earlier
    /// records of the keys that were used before. A statement that fails stores nothing of any submit of the
    /// group, and each gets that error; a reused key is refused for its submit alone.
    private func enqueueGroup(_ group: [PendingSubmit]) async -> [Result<EnqueueOutcome, RelayError>] {
        let logger = self.logger
        // A key twice in one group: the first claims it, the later ones are answered from its record, as when
        // they come one after the other.
        var first: [SubmitKey: Int] = [:]
        for (index, pending) in group.enumerated() where first[SubmitKey(pending.submit)] == nil {
            first[SubmitKey(pending.submit)] = index
        }
        let claiming = group.indices.filter { first[SubmitKey(group[$0].submit)] == $0 }
        let statement = GroupStatement(claiming.map { group[$0] })
        // The group's statements end within the operation timeout of its oldest submit.
        let deadline = (group.map(\.arrived).min() ?? .now) + self.operationTimeout
        let claimed: Set<SubmitKey>
        do throws(RelayError) {
            claimed = try await self.read("enqueue", timeout: Self.remaining(until: deadline)) { connection in
                try await Self.claim(statement, connection, logger: logger)
            }
        } catch {
            return group.map { _ in .failure(error) }
        }
        self.lastWriteNoRoom.withLock { $0 = nil }

        // A later submit of a key this group claimed is answered from the claiming submit's record (the response
        // the statement stored, not encoded again).
        var earlier: [SubmitKey: Earlier] = [:]
        for (row, index) in claiming.enumerated() where claimed.contains(SubmitKey(group[index].submit)) {
            let submit = group[index].submit
            earlier[SubmitKey(submit)] = Earlier(digest: submit.requestDigest, response: statement.responses[row])
        }
        let unclaimed = Set(group.map { SubmitKey($0.submit) }).subtracting(claimed)
        var readFailure: RelayError?
        if !unclaimed.isEmpty {
            do throws(RelayError) {
                let read = try await self.read("enqueue", timeout: Self.remaining(until: deadline)) { connection in
                    try await Self.earlier(Array(unclaimed), connection, logger: logger)
                }
                earlier.merge(read) { claimedHere, _ in claimedHere }
            } catch {
                readFailure = error
            }
        }
        return group.indices.map { index -> Result<EnqueueOutcome, RelayError> in
            let submit = group[index].submit
            let key = SubmitKey(submit)
            if claimed.contains(key) && first[key] == index { return .success(StorePolicy.accepted(submit)) }
            guard let record = earlier[key] else {
                return .failure(
                    readFailure
                        ?? RelayError(.storageUnavailable, "an idempotency record vanished during the submit: retry")
                )
            }
            do throws(RelayError) {
                return .success(try StorePolicy.replay(record.digest, record.response, for: submit))
            } catch {
                return .failure(error)
            }
        }
    }

    /// What is left until `deadline`; at least a millisecond, so that a group whose time is up still gets its
    /// answer (a timeout) from the same path.
    private static func remaining(until deadline: ContinuousClock.Instant) -> Duration {
        max(deadline - .now, .milliseconds(1))
    }

    /// A submit's idempotency record's key.
    private struct SubmitKey: Hashable, Sendable {
        var userID: String
        var idempotencyKey: String
        init(_ submit: NewSubmit) {
            self.userID = submit.userID
            self.idempotencyKey = submit.idempotencyKey
        }
        init(userID: String, idempotencyKey: String) {
            self.userID = userID
            self.idempotencyKey = idempotencyKey
        }
    }

    /// The group statement's parameters: one row per submit, one per push.
    private struct GroupStatement: Sendable {
        var users: [String] = []
        var keys: [String] = []
        var digests: [ByteBuffer] = []
        var responses: [String] = []
        var nows: [Int64] = []
        var pushUsers: [String] = []
        var pushKeys: [String] = []
        var pushIDs: [String] = []
        var pushDevices: [String] = []
        var pushEnvelopes: [ByteBuffer] = []
        var pushNows: [Int64] = []
        /// The lease owner of each push, "" for a queued one (PostgresNIO binds no array of optionals).
        var pushOwners: [String] = []
        /// The lease's expiry of each push, 0 for a queued one.
        var pushLeaseEnds: [Int64] = []
        /// Pushes per submit, to check what the statement inserted.
        var pushCounts: [SubmitKey: Int] = [:]

        init(_ submits: [PendingSubmit]) {
            for pending in submits {
                let submit = pending.submit
                self.users.append(submit.userID)
                self.keys.append(submit.idempotencyKey)
                self.digests.append(ByteBuffer(bytes: submit.requestDigest))
                self.responses.append(StorePolicy.encode(StorePolicy.accepted(submit).pushes))
                self.nows.append(pending.nowMs)
                self.pushCounts[SubmitKey(submit)] = submit.pushes.count
                for push in submit.pushes {
                    self.pushUsers.append(submit.userID)
                    self.pushKeys.append(submit.idempotencyKey)
                    self.pushIDs.append(push.pushID)
                    self.pushDevices.append(push.deviceID)
                    self.pushEnvelopes.append(ByteBuffer(bytes: push.envelope))
                    self.pushNows.append(pending.nowMs)
                    self.pushOwners.append(submit.lease?.owner ?? "")
                    self.pushLeaseEnds.append(submit.lease?.expiresAtMs ?? 0)
                }
            }
        }
    }

    /// One statement, so one transaction: claims each submit's key, and inserts the pushes of the submits whose
    /// key it claimed, in the order they came. The keys are claimed in key order, so two instances whose groups
    /// share keys wait for each other in one order (never a deadlock); a key another transaction is claiming waits
    /// for it, then is claimed by nothing here.
    ///
    /// - Returns: the keys claimed.
    private static func claim(
        _ statement: GroupStatement,
        _ connection: PostgresConnection,
        logger: Logger
    ) async throws -> Set<SubmitKey> {
        let rows = try await connection.query(
            """
            WITH claimed AS (
              INSERT INTO submissions (user_id, idempotency_key, request_sha256, response, created_at_ms)
              SELECT s.user_id, s.idempotency_key, s.request_sha256, s.response, s.now_ms
              FROM unnest(\(statement.users)::text[], \(statement.keys)::text[], \(statement.digests)::bytea[],
                \(statement.responses)::text[], \(statement.nows)::int8[])
                AS s(user_id, idempotency_key, request_sha256, response, now_ms)
              ORDER BY s.user_id, s.idempotency_key
              ON CONFLICT DO NOTHING RETURNING user_id, idempotency_key),
            inserted AS (
              INSERT INTO pushes (push_id, user_id, device_id, envelope, state, attempts, next_attempt_at_ms,
                enqueued_at_ms, completions, lease_owner, lease_expires_at_ms)
              SELECT p.push_id, p.user_id, p.device_id, p.envelope,
                CASE WHEN p.owner = '' THEN 'queued' ELSE 'leased' END, CASE WHEN p.owner = '' THEN 0 ELSE 1 END,
                p.now_ms, p.now_ms, 0, NULLIF(p.owner, ''), NULLIF(p.lease_ends, 0)
              FROM unnest(\(statement.pushUsers)::text[], \(statement.pushKeys)::text[], \(statement.pushIDs)::text[],
                \(statement.pushDevices)::text[], \(statement.pushEnvelopes)::bytea[], \(statement.pushNows)::int8[],
                \(statement.pushOwners)::text[], \(statement.pushLeaseEnds)::int8[])
                WITH ORDINALITY
                AS p(user_id, idempotency_key, push_id, device_id, envelope, now_ms, owner, lease_ends, position)
              JOIN claimed c ON c.user_id = p.user_id AND c.idempotency_key = p.idempotency_key
              ORDER BY p.position
              RETURNING 1)
            SELECT c.user_id, c.idempotency_key, (SELECT count(*) FROM inserted) FROM claimed c
            """,
            logger: logger
        )
        var claimed: Set<SubmitKey> = []
        var inserted: Int64 = 0
        for try await (user, key, count) in rows.decode((String, String, Int64).self) {
            claimed.insert(SubmitKey(userID: user, idempotencyKey: key))
            inserted = count
        }
        let expected = claimed.reduce(0) { $0 + (statement.pushCounts[$1] ?? 0) }
        guard inserted == Int64(expected) else {
            throw RelayError(.internalError, "enqueued \(inserted) of \(expected) pushes")
        }
        return claimed
    }

    /// The records of keys used before (committed, since the claim waited for any that was being claimed).
    private static func earlier(
        _ keys: [SubmitKey],
        _ connection: PostgresConnection,
        logger: Logger
    ) async throws -> [SubmitKey: Earlier] {
        let rows = try await connection.query(
            """
            SELECT s.user_id, s.idempotency_key, s.request_sha256, s.response FROM submissions s
            JOIN unnest(\(keys.map(\.userID))::text[], \(keys.map(\.idempotencyKey))::text[]) AS w(user_id, idempotency_key)
              ON s.user_id = w.user_id AND s.idempotency_key = w.idempotency_key
            """,
            logger: logger
        )
        var records: [SubmitKey: Earlier] = [:]
        for try await (user, key, digest, response) in rows.decode((String, String, ByteBuffer, String).self) {
            records[SubmitKey(userID: user, idempotencyKey: key)] = Earlier(
                digest: Self.bytes(digest),
                response: response
            )
        }
        return records
    }

    #if DEBUG
    /// Group statements of submits run so far (tests).
    var enqueueGroups: Int { self.enqueues.groups }
    /// Submits waiting for the next group (tests).
    var waitingEnqueues: Int { self.enqueues.waiting }
    /// Holds the submits' line until the returned function is called (tests that line submits up into one group).
    func holdEnqueues() async -> @Sendable () -> Void { await self.enqueues.hold() }
    /// Context reads run so far, one per group (tests).
    var contextReadGroups: Int { self.contextReads.groups }
    /// Context reads waiting for the next group (tests).
    var waitingContextReads: Int { self.contextReads.waiting }
    /// Holds the context reads' line until the returned function is called (tests).
    func holdContextReads() async -> @Sendable () -> Void { await self.contextReads.hold() }
    #endif

    private struct Earlier: Sendable {
        var digest: [UInt8]
        var response: String
    }

    public func lease(
        owner: String,
        limit: Int,
        nowMs: Int64,
        leaseMs: Int64
    ) async throws(RelayError)
        -> [LeasedPush]
    {
        let logger = self.logger
        return try await self.statement("lease") { connection in
            // One round trip: lease the due rows and join each with its device's active address. One statement,
            // so no BEGIN and COMMIT around it: PostgreSQL runs it as its own transaction, all or nothing.
            let rows = try await connection.query(
                Self.leaseQuery(owner: owner, limit: limit, nowMs: nowMs, leaseMs: leaseMs),
                logger: logger
            )
            var leased: [LeasedPush] = []
            for try await (pushID, userID, deviceID, envelope, attempts, enqueued, service, text, environment)
                in rows.decode(
                    (String, String, String, ByteBuffer?, Int64, Int64, String?, String?, String?).self
                )
            {
                let address = Self.address(service: service, text: text, environment: environment)
                leased.append(
                    LeasedPush(
                        pushID: pushID,
                        userID: userID,
                        deviceID: deviceID,
                        envelope: Self.bytes(envelope),
                        attempts: Int(attempts),
                        enqueuedAtMs: enqueued,
                        address: address
                    )
                )
            }
            return leased
        }
    }

    /// The lease statement: the due rows, locked and leased, each joined with its device's active address. With
    /// `explain`, the same statement under `EXPLAIN (ANALYZE, FORMAT JSON)` (tests: it still leases).
    private static func leaseQuery(
        owner: String,
        limit: Int,
        nowMs: Int64,
        leaseMs: Int64,
        explain: Bool = false
    ) -> PostgresQuery {
        let prefix = explain ? "EXPLAIN (ANALYZE, FORMAT JSON) " : ""
        return
            """
            \(unescaped: prefix)WITH expired AS (
              SELECT seq, lease_expires_at_ms AS due FROM pushes
              WHERE state = 'leased' AND lease_expires_at_ms <= \(nowMs)
              ORDER BY lease_expires_at_ms, seq LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED),
            queued AS (
              SELECT seq, next_attempt_at_ms AS due FROM pushes
              WHERE state = 'queued' AND next_attempt_at_ms <= \(nowMs)
              ORDER BY next_attempt_at_ms, seq LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED),
            due AS (
              SELECT seq, due FROM expired UNION ALL SELECT seq, due FROM queued
              ORDER BY due, seq LIMIT \(Int64(limit))),
            leased AS (
              UPDATE pushes p SET state = 'leased', lease_owner = \(owner),
                lease_expires_at_ms = \(nowMs + leaseMs), attempts = p.attempts + 1
              FROM due WHERE p.seq = due.seq
              RETURNING p.push_id, p.user_id, p.device_id, p.envelope, p.attempts, p.enqueued_at_ms, p.seq)
            SELECT l.push_id, l.user_id, l.device_id, l.envelope, l.attempts, l.enqueued_at_ms,
              d.service, d.address, d.environment
            FROM leased l LEFT JOIN devices d
              ON d.user_id = l.user_id AND d.device_id = l.device_id AND d.address IS NOT NULL
                AND d.unregistered_at_ms IS NULL
            ORDER BY l.seq
            """
    }

    #if DEBUG
    /// Leases as ``lease(owner:limit:nowMs:leaseMs:)`` does and returns the rows the statement's scans read: those
    /// they returned plus those their filters removed (tests: a lease's work must not grow with waiting retries).
    func leaseRowsReadForTesting(owner: String, limit: Int, nowMs: Int64, leaseMs: Int64) async throws -> Int {
        let logger = self.logger
        let plan = try await self.transaction("lease (explained)") { connection in
            let rows = try await connection.query(
                Self.leaseQuery(owner: owner, limit: limit, nowMs: nowMs, leaseMs: leaseMs, explain: true),
                logger: logger
            )
            var text = ""
            for try await (line, ) in rows.decode((String,).self) { text += line }
            return text
        }
        // Counts are decoded as Double: PostgreSQL 18 prints "Actual Rows" with decimals.
        struct Node: Decodable {
            var nodeType: String
            var actualRows: Double
            var actualLoops: Double
            var removed: Double?
            var plans: [Node]?
            enum CodingKeys: String, CodingKey {
                case nodeType = "Node Type"
                case actualRows = "Actual Rows"
                case actualLoops = "Actual Loops"
                case removed = "Rows Removed by Filter"
                case plans = "Plans"
            }
            var rowsRead: Double {
                let own = nodeType.hasSuffix("Scan") ? (actualRows + (removed ?? 0)) * actualLoops : 0
                return own + (plans ?? []).reduce(0) { $0 + $1.rowsRead }
            }
        }
        struct Explained: Decodable {
            var plan: Node
            enum CodingKeys: String, CodingKey { case plan = "Plan" }
        }
        let rows = try JSONDecoder().decode([Explained].self, from: Data(plan.utf8)).reduce(0) { $0 + $1.plan.rowsRead }
        return Int(rows.rounded())
    }
    #endif

    public func complete(
        _ completions: [Completion],
        owner: String,
        nowMs: Int64
    ) async throws(RelayError)
        -> [CompletionResult]
    {
        let logger = self.logger
        return try await self.transaction("complete") { connection in
            try await Self.complete(connection, completions, owner: owner, nowMs, logger)
        }
    }

    /// Records a batch in three round trips, whatever its size: lock the rows, update the pushes still queued or
    /// leased, count a completion on the others (delivered twice); then mark dead addresses (410s, rare).
    private static func complete(
        _ connection: PostgresConnection,
        _ completions: [Completion],
        owner: String,
        _ nowMs: Int64,
        _ logger: Logger
    ) async throws -> [CompletionResult] {
        let ids = completions.map(\.pushID)
        // Locked in push id order, as every completing instance does, so two batches never wait on each other.
        let rows = try await connection.query(
            """
            SELECT push_id, state, user_id, device_id, lease_owner, attempts FROM pushes WHERE push_id = ANY(\(ids))
            ORDER BY push_id FOR UPDATE
            """,
            logger: logger
        )
        var found: [String: (state: String, userID: String, deviceID: String, owner: String?, attempts: Int64)] = [:]
        for try await (pushID, state, userID, deviceID, leaseOwner, attempts) in rows.decode(
            (String, String, String, String, String?, Int64).self
        ) {
            found[pushID] = (state, userID, deviceID, leaseOwner, attempts)
        }
        var results: [CompletionResult] = []
        var twice: [String] = []
        var update = (
            ids: [String](), states: [String](), retryAt: [Int64](), hasRetry: [Int64](), status: [Int64](),
            hasStatus: [Int64](), reason: [String](), hasReason: [Int64](), final: [Int64]()
        )
        var deadAddresses: [(userID: String, deviceID: String, address: String, atMs: Int64, failed: String?)] = []
        var recorded = Set<String>()
        for completion in completions {
            guard let row = found[completion.pushID] else {
                results.append(.alreadyCompleted)
                continue
            }
            let open = row.state == PushState.queued.rawValue || row.state == PushState.leased.rawValue
            if !open,
                StorePolicy.sameLease(
                    recordedOwner: row.owner,
                    recordedAttempts: Int(row.attempts),
                    owner: owner,
                    attempt: completion.attempt
                )
            {
                // This lease's own completion, committed before (its answer was lost): recorded, not a duplicate.
                results.append(.recorded)
                continue
            }
            guard open, recorded.insert(completion.pushID).inserted else {
                twice.append(completion.pushID)
                results.append(.alreadyCompleted)
                continue
            }
            let values = StorePolicy.row(for: completion.outcome)
            update.ids.append(completion.pushID)
            update.states.append(values.state.rawValue)
            update.retryAt.append(values.retryAtMs ?? 0)
            update.hasRetry.append(values.retryAtMs == nil ? 0 : 1)
            update.status.append(Int64(values.status ?? 0))
            update.hasStatus.append(values.status == nil ? 0 : 1)
            update.reason.append(values.reason ?? "")
            update.hasReason.append(values.reason == nil ? 0 : 1)
            update.final.append(values.final ? 1 : 0)
            if let dead = StorePolicy.deadAddress(completion.outcome) {
                deadAddresses.append((row.userID, row.deviceID, dead.address, dead.atMs, dead.failedReason))
            }
            results.append(.recorded)
        }
        if !update.ids.isEmpty {
            try await connection.query(
                """
                UPDATE pushes p SET state = i.state,
                  next_attempt_at_ms = CASE WHEN i.has_retry = 1 THEN i.retry_at ELSE p.next_attempt_at_ms END,
                  service_status = CASE WHEN i.has_status = 1 THEN i.status ELSE NULL END,
                  service_reason = CASE WHEN i.has_reason = 1 THEN i.reason ELSE NULL END,
                  lease_owner = CASE WHEN i.final = 1 THEN \(owner) ELSE NULL END, lease_expires_at_ms = NULL,
                  completed_at_ms = CASE WHEN i.final = 1 THEN \(nowMs) ELSE NULL END,
                  completions = p.completions + i.final,
                  envelope = CASE WHEN i.final = 1 THEN NULL ELSE p.envelope END
                FROM unnest(\(update.ids)::text[], \(update.states)::text[], \(update.retryAt)::int8[],
                  \(update.hasRetry)::int8[], \(update.status)::int8[], \(update.hasStatus)::int8[],
                  \(update.reason)::text[], \(update.hasReason)::int8[], \(update.final)::int8[])
                  AS i(push_id, state, retry_at, has_retry, status, has_status, reason, has_reason, final)
                WHERE p.push_id = i.push_id
                """,
                logger: logger
            )
        }
        if !twice.isEmpty {
            // A push id twice in one batch counts twice, as two completions would.
            for pushID in twice {
                try await connection.query(
                    "UPDATE pushes SET completions = completions + 1 WHERE push_id = \(pushID)",
                    logger: logger
                )
            }
        }
        for dead in deadAddresses {
            try await connection.query(
                """
                UPDATE devices SET unregistered_at_ms = \(dead.atMs), failed_reason = \(dead.failed)
                WHERE user_id = \(dead.userID) AND device_id = \(dead.deviceID) AND address = \(dead.address)
                  AND unregistered_at_ms IS NULL
                """,
                logger: logger
            )
        }
        return results
    }

    public func counts() async throws(RelayError) -> [PushState: Int] {
        let logger = self.logger
        return try await self.read("counts") { connection in
            let rows = try await connection.query("SELECT state, COUNT(*) FROM pushes GROUP BY state", logger: logger)
            var counts: [PushState: Int] = [:]
            for try await (state, count) in rows.decode((String, Int64).self) {
                if let state = PushState(rawValue: state) { counts[state] = Int(count) }
            }
            return counts
        }
    }

    public func push(_ pushID: String) async throws(RelayError) -> PushRecord? {
        let logger = self.logger
        return try await self.read("push") { connection in
            let rows = try await connection.query(
                """
                SELECT user_id, device_id, state, attempts, completions, service_status, service_reason
                FROM pushes WHERE push_id = \(pushID)
                """,
                logger: logger
            )
            for try await (userID, deviceID, state, attempts, completions, status, reason) in rows.decode(
                (String, String, String, Int64, Int64, Int64?, String?).self
            ) {
                return PushRecord(
                    pushID: pushID,
                    userID: userID,
                    deviceID: deviceID,
                    state: PushState(rawValue: state) ?? .failed,
                    attempts: Int(attempts),
                    completions: Int(completions),
                    serviceStatus: status.map(Int.init),
                    serviceReason: reason
                )
            }
            return nil
        }
    }

    public func deliveredLatenciesMs() async throws(RelayError) -> [Int64] {
        let logger = self.logger
        return try await self.read("latencies") { connection in
            let rows = try await connection.query(
                "SELECT completed_at_ms - enqueued_at_ms FROM pushes WHERE state = 'delivered' ORDER BY 1",
                logger: logger
            )
            var values: [Int64] = []
            for try await value in rows.decode(Int64.self) { values.append(value) }
            return values
        }
    }

    public func purge(nowMs: Int64) async throws(RelayError) {
        let logger = self.logger
        let cutoff = nowMs - StorePolicy.idempotencyWindowMs
        var binds = PostgresBindings()
        binds.append(nowMs - StorePolicy.completedRetentionMs)
        let purgeCompleted = PostgresQuery(unsafeSQL: StorePolicy.purgeCompletedSQL("$1"), binds: binds)
        try await self.transaction("purge") { connection in
            try await connection.query("DELETE FROM auth_nonces WHERE expires_at_ms <= \(nowMs)", logger: logger)
            try await connection.query("DELETE FROM submissions WHERE created_at_ms <= \(cutoff)", logger: logger)
            try await connection.query(purgeCompleted, logger: logger)
        }
    }

    /// A registered address from its columns; nil when the device has none.
    static func address(service: String?, text: String?, environment: String?) -> RegisteredAddress? {
        guard let service, let text else { return nil }
        return RegisteredAddress(
            push: PushAddress(service: PushService(rawValue: service), address: text),
            environment: environment
        )
    }
}
