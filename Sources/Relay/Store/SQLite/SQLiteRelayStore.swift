import E2EECore
import Foundation
import Locking
public import RelayClient
import SQLiteSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The embedded store: one SQLite file, WAL mode, `synchronous=FULL`, one connection per process.
///
/// A commit is on disk before any method returns, so the API's 202 follows a durable commit. Every method runs
/// its statements on one serial queue that owns the connection, in one transaction when it writes; callers wait
/// without holding a thread of Swift's concurrency pool.
///
/// **Group commit.** Submits that arrive while the queue is busy (most of them under load: a commit waits for the
/// disk) are enqueued together in one transaction, each inside its own savepoint, and answered after that one
/// commit. A submit refused by the queue's rules (a reused idempotency key) rolls back to its savepoint alone; a
/// storage failure (a full disk, an I/O error) rolls the whole transaction back and every submit of the group gets
/// that error: nothing of any of them was stored. The outcomes the delivery workers record (``complete(_:owner:
/// nowMs:)``) join the same group and its one sync to disk; when a shared commit fails, the submits and the
/// outcomes are each tried again in a transaction of their own, so neither half fails for the other's sake.
public final class SQLiteRelayStore: RelayStore {
    /// The connection, touched only on ``queue``.
    private final class Holder: @unchecked Sendable {
        var connection: SQLiteConnection?
        init(_ connection: SQLiteConnection) { self.connection = connection }
    }

    /// A submit waiting for the next group commit.
    private struct PendingEnqueue: Sendable {
        var submit: NewSubmit
        var nowMs: Int64
        var continuation: CheckedContinuation<Result<EnqueueOutcome, RelayError>, Never>
    }

    private let holder: Holder
    private let queue = DispatchQueue(label: "e2ee-relay.sqlite")
    /// A delivery worker's outcomes waiting for the next group commit.
    private struct PendingCompletions: Sendable {
        var completions: [Completion]
        var owner: String
        var nowMs: Int64
        var continuation: CheckedContinuation<Result<[CompletionResult], RelayError>, Never>
    }

    /// The writes waiting for the next group commit.
    private struct PendingWrites: Sendable {
        var enqueues: [PendingEnqueue] = []
        var completions: [PendingCompletions] = []
        var isEmpty: Bool { enqueues.isEmpty && completions.isEmpty }
    }

    private let pendingWrites = PThreadMutex(PendingWrites())
    /// The database file.
    public let path: String

    /// Opens (creating if needed) the database at `path` and takes SQLite's exclusive lock on it, so a second
    /// relay process on the same file fails at start instead of fighting over the queue.
    ///
    /// - Throws: `storage-unavailable` with SQLite's reason.
    public init(path: String) throws(RelayError) {
        let connection: SQLiteConnection
        do throws(RelayError) {
            connection = try SQLiteConnection(path: path)
            try connection.execute("PRAGMA busy_timeout=2000")
            try connection.execute("PRAGMA journal_mode=WAL")
            try connection.execute("PRAGMA synchronous=FULL")
            try connection.execute("PRAGMA locking_mode=EXCLUSIVE")
            // The exclusive lock is taken by the first write; take it now.
            try connection.execute("BEGIN IMMEDIATE; COMMIT")
        } catch {
            throw Self.openError(path, error)
        }
        self.path = path
        self.holder = Holder(connection)
    }

    /// An open failure with the database named and, when the folder is the cause, what to do about it.
    static func openError(_ path: String, _ error: RelayError) -> RelayError {
        let folder =
            (path as NSString).deletingLastPathComponent.isEmpty
            ? "." : (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        let reason: String
        if !FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) {
            reason = "its folder \(folder) does not exist: create it (mkdir -p) or pass another --database path"
        } else if !isDirectory.boolValue {
            reason = "\(folder) is not a folder: pass another --database path"
        } else if access(folder, W_OK) != 0 {
            reason =
                "its folder \(folder) is not writable by this user (uid \(getuid())); SQLite creates the database and "
                + "its -wal file there: fix the folder's permissions or pass another --database path"
        } else {
            return RelayError(error.code, "cannot open the SQLite database \(path): \(error.message)")
        }
        return RelayError(.storageUnavailable, "cannot open the SQLite database \(path): \(reason) (\(error.message))")
    }

    /// Runs `body` on the store's queue with the connection, and waits for it without blocking the caller's thread.
    private func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (SQLiteConnection) throws(RelayError) -> T
    ) async throws(RelayError) -> T {
        let result: Result<T, RelayError> = await withCheckedContinuation { continuation in
            self.queue.async {
                continuation.resume(returning: self.onQueue(body))
            }
        }
        return try result.get()
    }

    /// Runs `body` with the connection; call on ``queue`` only.
    private func onQueue<T>(_ body: (SQLiteConnection) throws(RelayError) -> T) -> Result<T, RelayError> {
        guard let connection = self.holder.connection else {
            return .failure(RelayError(.storageUnavailable, "the store is closed"))
        }
        do throws(RelayError) {
            return .success(try body(connection))
        } catch {
            return .failure(error)
        }
    }

    /// Brings the database to ``RelaySchema/currentVersion``: each missing migration in a transaction of its own,
    /// which also records its version in `PRAGMA user_version` and marks the file as the relay's
    /// (`PRAGMA application_id`). A database made before versions were recorded (no mark, version 0, only the
    /// relay's tables) is adopted by version 1.
    ///
    /// - Throws: `storage-unavailable` (the relay exits 69) for another application's SQLite file or a schema
    ///   version newer than this build knows, with what to do.
    public func migrate() async throws(RelayError) {
        let path = self.path
        try await self.withConnection { db throws(RelayError) in
            try Self.checkOwnership(db, path: path)
            while true {
                let migrated = try db.transaction { () throws(RelayError) -> Bool in
                    let version = try Self.pragma(db, "user_version")
                    guard
                        let migration = try RelaySchema.migration(
                            after: version,
                            database: "the SQLite database \(path)"
                        )
                    else { return false }
                    for statement in migration.statements(.sqlite) { try Self.apply(statement, db) }
                    // PRAGMA values cannot be bound; both are integers of this build.
                    try db.execute("PRAGMA application_id = \(RelaySchema.applicationID)")
                    try db.execute("PRAGMA user_version = \(migration.version)")
                    return true
                }
                if !migrated { return }
            }
        }
    }

    /// Refuses an SQLite file that is not the relay's: another application's mark, or, unmarked, a version or tables
    /// that the relay's databases made before versions were recorded do not have.
    private static func checkOwnership(_ db: SQLiteConnection, path: String) throws(RelayError) {
        let appID = try Self.pragma(db, "application_id")
        if appID == RelaySchema.applicationID { return }
        let version = try Self.pragma(db, "user_version")
        var foreignTables: [String] = []
        try db.withStatement(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        ) { s throws(RelayError) in
            while try s.step() {
                let name = s.text(0)
                if !RelaySchema.version1Tables.contains(name) { foreignTables.append(name) }
            }
        }
        guard appID != 0 || version != 0 || !foreignTables.isEmpty else { return }
        let what =
            appID != 0
            ? "application_id \(appID)"
            : version != 0 ? "user_version \(version)" : "tables \(foreignTables.joined(separator: ", "))"
        throw RelayError(
            .storageUnavailable,
            "\(path) is an SQLite database of another application (\(what)), not the relay's: point --database at "
                + "the relay's own database file (a new path creates one)"
        )
    }

    private static func pragma(_ db: SQLiteConnection, _ name: String) throws(RelayError) -> Int64 {
        try db.withStatement("PRAGMA \(name)") { s throws(RelayError) in try s.step() ? s.int64(0) : 0 }
    }

    private static func apply(_ statement: RelaySchema.Statement, _ db: SQLiteConnection) throws(RelayError) {
        switch statement {
        case .sql(let sql):
            try db.execute(sql)
        case .addColumnIfMissing(let table, let column, let definition):
            let has = try db.withStatement("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2") {
                s throws(RelayError) -> Bool in
                try s.bind(table, at: 1)
                try s.bind(column, at: 2)
                return try s.step()
            }
            if !has { try db.execute("ALTER TABLE \(table) ADD COLUMN \(column) \(definition)") }
        case .unframeQueuedAPNsBodies:
            let rows = try db.withStatement("SELECT seq, envelope FROM pushes WHERE envelope IS NOT NULL") {
                s throws(RelayError) -> [(seq: Int64, body: [UInt8])] in
                var rows: [(seq: Int64, body: [UInt8])] = []
                while try s.step() { rows.append((s.int64(0), s.blob(1))) }
                return rows
            }
            for row in rows {
                guard let envelope = RelaySchema.envelope(fromAPNsBody: row.body) else { continue }
                try db.withStatement("UPDATE pushes SET envelope = ?1 WHERE seq = ?2") { s throws(RelayError) in
                    try s.bind(envelope, at: 1)
                    try s.bind(row.seq, at: 2)
                    try s.run()
                }
            }
        }
    }

    /// Checks the database answers, and that its last write did not fail for lack of space.
    ///
    /// - Throws: `storage-full` (the last write's error) from a write that failed for lack of space until a write
    ///   succeeds again; `storage-unavailable` when the database does not answer.
    public func ping() async throws(RelayError) {
        try await self.withConnection { db throws(RelayError) in
            try db.withStatement("SELECT 1") { s throws(RelayError) in _ = try s.step() }
            if let noRoom = db.lastWriteNoRoom { throw noRoom }
        }
    }

    #if DEBUG
    /// Group transactions of submits committed so far (tests).
    private let groupCommits = PThreadMutex(0)
    var enqueueGroupCommits: Int { self.groupCommits.withLock { $0 } }
    /// Transactions of waiting writes (submits, outcomes or both) committed so far (tests).
    private let writeCommits = PThreadMutex(0)
    var groupWriteCommits: Int { self.writeCommits.withLock { $0 } }
    /// Submits waiting for the next group commit (tests).
    var waitingEnqueues: Int { self.pendingWrites.withLock { $0.enqueues.count } }
    /// Workers' outcome batches waiting for the next group commit (tests).
    var waitingCompletions: Int { self.pendingWrites.withLock { $0.completions.count } }
    /// SQLite VM steps of the last lease statement (tests: a lease's work must not grow with the waiting retries).
    private let leaseSteps = PThreadMutex(0)
    var lastLeaseVMSteps: Int { self.leaseSteps.withLock { $0 } }

    /// Holds the store's queue until the returned function is called (tests that line submits up into one group).
    func holdQueue() -> @Sendable () -> Void {
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        self.queue.async {
            held.signal()
            release.wait()
        }
        held.wait()
        return { release.signal() }
    }

    /// Caps the database at the pages it has now (SQLite's `max_page_count`, for this connection): a write that
    /// needs another page then fails with SQLITE_FULL, `storage-full`, as on a full disk. For tests that fill the
    /// disk of a relay running in their own process; debug builds only (tests), never in a release binary.
    func capAtCurrentSize() throws(RelayError) {
        try self.queue.sync {
            self.onQueue { db throws(RelayError) in
                // max_page_count is never set below the current size: 1 means "no page more".
                try db.execute("PRAGMA max_page_count = 1")
            }
        }.get()
    }
    #endif

    public func list(userID: String) async throws(RelayError) -> StoredList? {
        try await self.withConnection { db throws(RelayError) in try Self.list(db, userID) }
    }

    private static func list(_ db: SQLiteConnection, _ userID: String) throws(RelayError) -> StoredList? {
        try db.withStatement(
            "SELECT user_signing_key, list_version, list_digest, list_json FROM lists WHERE user_id = ?1"
        ) { s throws(RelayError) in
            try s.bind(userID, at: 1)
            guard try s.step() else { return nil }
            return StoredList(
                userID: userID,
                userSigningKey: s.blob(0),
                listVersion: UInt64(s.int64(1)),
                digest: s.blob(2),
                json: s.blob(3)
            )
        }
    }

    public func publish(_ list: NewList, nowMs: Int64) async throws(RelayError) -> Bool {
        try await self.withConnection { db throws(RelayError) in
            try db.transaction { () throws(RelayError) -> Bool in
                if let stored = try Self.list(db, list.userID) {
                    guard try StorePolicy.admit(list, over: stored) else { return false }
                }
                try db.withStatement(
                    """
                    INSERT INTO lists (user_id, user_signing_key, list_version, list_digest, list_json, updated_at_ms)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                    ON CONFLICT (user_id) DO UPDATE SET user_signing_key = excluded.user_signing_key,
                      list_version = excluded.list_version, list_digest = excluded.list_digest,
                      list_json = excluded.list_json, updated_at_ms = excluded.updated_at_ms
                    """
                ) { s throws(RelayError) in
                    try s.bind(list.userID, at: 1)
                    try s.bind(list.userSigningKey, at: 2)
                    try s.bind(Int64(list.listVersion), at: 3)
                    try s.bind(list.digest, at: 4)
                    try s.bind(list.json, at: 5)
                    try s.bind(nowMs, at: 6)
                    try s.run()
                }
                let existing = try Self.devices(db, list.userID)
                let kept = Set(list.devices.map(\.deviceID))
                for device in existing where !kept.contains(device.deviceID) {
                    try Self.removeDevice(db, list.userID, device.deviceID, nowMs: nowMs)
                }
                for (position, device) in list.devices.enumerated() {
                    let previous = existing.first { $0.deviceID == device.deviceID }
                    if let previous, previous.signingKey != device.signingKey {
                        // A new device under an old name: the old one's address and queue are not its own.
                        try Self.removeDevice(db, list.userID, device.deviceID, nowMs: nowMs)
                    }
                    try db.withStatement(
                        """
                        INSERT INTO devices (user_id, device_id, position, signing_key) VALUES (?1, ?2, ?3, ?4)
                        ON CONFLICT (user_id, device_id) DO UPDATE SET position = excluded.position
                        """
                    ) { s throws(RelayError) in
                        try s.bind(list.userID, at: 1)
                        try s.bind(device.deviceID, at: 2)
                        try s.bind(Int64(position), at: 3)
                        try s.bind(device.signingKey, at: 4)
                        try s.run()
                    }
                }
                return true
            }
        }
    }

    private static func removeDevice(
        _ db: SQLiteConnection,
        _ userID: String,
        _ deviceID: String,
        nowMs: Int64
    )
        throws(RelayError)
    {
        try db.withStatement("DELETE FROM devices WHERE user_id = ?1 AND device_id = ?2") { s throws(RelayError) in
            try s.bind(userID, at: 1)
            try s.bind(deviceID, at: 2)
            try s.run()
        }
        try db.withStatement(
            """
            UPDATE pushes SET state = 'removed', envelope = NULL, completed_at_ms = ?3, lease_owner = NULL,
              lease_expires_at_ms = NULL
            WHERE user_id = ?1 AND device_id = ?2 AND state IN ('queued', 'leased')
            """
        ) { s throws(RelayError) in
            try s.bind(userID, at: 1)
            try s.bind(deviceID, at: 2)
            try s.bind(nowMs, at: 3)
            try s.run()
        }
    }

    public func devices(userID: String) async throws(RelayError) -> [StoredDevice] {
        try await self.withConnection { db throws(RelayError) in try Self.devices(db, userID) }
    }

    private static func devices(_ db: SQLiteConnection, _ userID: String) throws(RelayError) -> [StoredDevice] {
        try db.withStatement(
            """
            SELECT device_id, signing_key, service, address, environment, unregistered_at_ms, failed_reason
            FROM devices WHERE user_id = ?1 ORDER BY position
            """
        ) { s throws(RelayError) in
            try s.bind(userID, at: 1)
            var devices: [StoredDevice] = []
            while try s.step() {
                var address: RegisteredAddress?
                if let service = s.optionalText(2), let text = s.optionalText(3) {
                    address = RegisteredAddress(
                        push: PushAddress(service: PushService(rawValue: service), address: text),
                        environment: s.optionalText(4)
                    )
                }
                devices.append(
                    StoredDevice(
                        deviceID: s.text(0),
                        signingKey: s.blob(1),
                        address: address,
                        unregisteredAtMs: s.optionalInt64(5),
                        failedReason: s.optionalText(6)
                    )
                )
            }
            return devices
        }
    }

    public func submitContext(userID: String, tokenHash: [UInt8]?) async throws(RelayError) -> SubmitContext {
        try await self.withConnection { db throws(RelayError) in
            let hasList = try Self.list(db, userID) != nil
            var tokenIsValid = false
            if let tokenHash {
                tokenIsValid = try Self.isDeliveryToken(db, tokenHash, of: userID)
            }
            let tokenCount = try db.withStatement("SELECT COUNT(*) FROM delivery_tokens WHERE user_id = ?1") {
                s throws(RelayError) -> Int in
                try s.bind(userID, at: 1)
                return try s.step() ? Int(s.int64(0)) : 0
            }
            return SubmitContext(
                hasList: hasList,
                tokenIsValid: tokenIsValid,
                devices: hasList ? try Self.devices(db, userID) : [],
                tokenCount: tokenCount
            )
        }
    }

    public func consumeNonce(_ nonce: [UInt8], expiresAtMs: Int64, nowMs: Int64) async throws(RelayError) -> Bool {
        try await self.withConnection { db throws(RelayError) in
            try db.transaction { () throws(RelayError) -> Bool in
                try db.withStatement("DELETE FROM auth_nonces WHERE expires_at_ms <= ?1") { s throws(RelayError) in
                    try s.bind(nowMs, at: 1)
                    try s.run()
                }
                return try db.withStatement(
                    "INSERT INTO auth_nonces (nonce, expires_at_ms) VALUES (?1, ?2) ON CONFLICT DO NOTHING"
                ) { s throws(RelayError) -> Bool in
                    try s.bind(nonce, at: 1)
                    try s.bind(expiresAtMs, at: 2)
                    try s.run()
                    return db.changes == 1
                }
            }
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
        try await self.withConnection { db throws(RelayError) in
            try db.transaction { () throws(RelayError) in
                try db.withStatement(
                    """
                    UPDATE devices SET service = ?3, address = ?4, environment = ?5, registered_at_ms = ?6,
                      unregistered_at_ms = NULL, failed_reason = NULL
                    WHERE user_id = ?1 AND device_id = ?2
                    """
                ) { s throws(RelayError) in
                    try s.bind(userID, at: 1)
                    try s.bind(deviceID, at: 2)
                    try s.bind(address.push.service.rawValue, at: 3)
                    try s.bind(address.push.address, at: 4)
                    try s.bind(address.environment, at: 5)
                    try s.bind(nowMs, at: 6)
                    try s.run()
                }
                guard db.changes == 1 else {
                    throw RelayError(.unknownDevice, "device \"\(deviceID)\" is not in the user's stored list")
                }
            }
        }
    }

    public func replaceDeliveryTokens(userID: String, hashes: [[UInt8]], nowMs: Int64) async throws(RelayError) {
        try await self.withConnection { db throws(RelayError) in
            try db.transaction { () throws(RelayError) in
                try db.withStatement("DELETE FROM delivery_tokens WHERE user_id = ?1") { s throws(RelayError) in
                    try s.bind(userID, at: 1)
                    try s.run()
                }
                for hash in hashes {
                    try db.withStatement(
                        """
                        INSERT INTO delivery_tokens (token_sha256, user_id, created_at_ms) VALUES (?1, ?2, ?3)
                        ON CONFLICT (token_sha256) DO UPDATE SET user_id = excluded.user_id
                        """
                    ) { s throws(RelayError) in
                        try s.bind(hash, at: 1)
                        try s.bind(userID, at: 2)
                        try s.bind(nowMs, at: 3)
                        try s.run()
                    }
                }
            }
        }
    }

    public func isDeliveryToken(_ hash: [UInt8], of userID: String) async throws(RelayError) -> Bool {
        try await self.withConnection { db throws(RelayError) in try Self.isDeliveryToken(db, hash, of: userID) }
    }

    private static func isDeliveryToken(
        _ db: SQLiteConnection,
        _ hash: [UInt8],
        of userID: String
    ) throws(RelayError) -> Bool {
        try db.withStatement(
            "SELECT 1 FROM delivery_tokens WHERE token_sha256 = ?1 AND user_id = ?2"
        ) { s throws(RelayError) -> Bool in
            try s.bind(hash, at: 1)
            try s.bind(userID, at: 2)
            return try s.step()
        }
    }

    public func enqueue(_ submit: NewSubmit, nowMs: Int64) async throws(RelayError) -> EnqueueOutcome {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<EnqueueOutcome, RelayError>, Never>) in
            self.pendingWrites.withLock {
                $0.enqueues.append(PendingEnqueue(submit: submit, nowMs: nowMs, continuation: continuation))
            }
            // One drain per write: the first that runs takes every write waiting by then; the rest find none.
            self.queue.async { self.commitPendingWrites() }
        }
        return try result.get()
    }

    /// Commits every waiting write (submits and outcomes) in one transaction, one sync to disk, and answers each;
    /// on ``queue`` only. When that shared commit fails, each half is tried again alone, the outcomes first (a
    /// half's failure alone is its answer).
    private func commitPendingWrites() {
        let group = self.pendingWrites.withLock { pending in
            defer { pending = PendingWrites() }
            return pending
        }
        guard !group.isEmpty else { return }
        let shared = self.onQueue { db throws(RelayError) in
            try db.transaction { () throws(RelayError) in
                (try Self.enqueueEach(db, group.enqueues), try Self.completeEach(db, group.completions))
            }
        }
        switch shared {
        case .success(let (enqueued, completed)):
            #if DEBUG
            self.writeCommits.withLock { $0 += 1 }
            #endif
            self.answer(group.enqueues, .success(enqueued))
            self.answer(group.completions, .success(completed))
        case .failure(let error) where group.enqueues.isEmpty || group.completions.isEmpty:
            self.answer(group.enqueues, .failure(error))
            self.answer(group.completions, .failure(error))
        case .failure:
            // The outcomes first: a failure of the submits is then the last write, and the storage-full it leaves
            // for health is not cleared by the outcomes' commit while submits are being refused.
            let completed = self.onQueue { db throws(RelayError) in
                try db.transaction { () throws(RelayError) in try Self.completeEach(db, group.completions) }
            }
            let enqueued = self.onQueue { db throws(RelayError) in
                try db.transaction { () throws(RelayError) in try Self.enqueueEach(db, group.enqueues) }
            }
            #if DEBUG
            self.writeCommits.withLock {
                $0 += ((try? enqueued.get()) == nil ? 0 : 1) + ((try? completed.get()) == nil ? 0 : 1)
            }
            #endif
            self.answer(group.enqueues, enqueued)
            self.answer(group.completions, completed)
        }
    }

    /// Answers the submits of a group: each its own result once the group committed, all the group's error else.
    private func answer(
        _ enqueues: [PendingEnqueue],
        _ result: Result<[Result<EnqueueOutcome, RelayError>], RelayError>
    ) {
        guard !enqueues.isEmpty else { return }
        switch result {
        case .success(let each):
            #if DEBUG
            self.groupCommits.withLock { $0 += 1 }
            #endif
            for (pending, result) in zip(enqueues, each) { pending.continuation.resume(returning: result) }
        case .failure(let error):
            for pending in enqueues { pending.continuation.resume(returning: .failure(error)) }
        }
    }

    /// Answers the workers' outcomes of a group, each worker its own results or the group's error.
    private func answer(_ completions: [PendingCompletions], _ result: Result<[[CompletionResult]], RelayError>) {
        for (index, pending) in completions.enumerated() {
            pending.continuation.resume(returning: result.map { $0[index] })
        }
    }

    /// The submits of a group, each in a savepoint of the open transaction. Throws (failing the transaction) on a
    /// storage error.
    private static func enqueueEach(
        _ db: SQLiteConnection,
        _ group: [PendingEnqueue]
    ) throws(RelayError) -> [Result<EnqueueOutcome, RelayError>] {
        var results: [Result<EnqueueOutcome, RelayError>] = []
        results.reserveCapacity(group.count)
        for pending in group {
            do throws(RelayError) {
                results.append(
                    .success(
                        try db.savepoint { () throws(RelayError) in
                            try Self.enqueueOne(db, pending.submit, nowMs: pending.nowMs)
                        }
                    )
                )
            } catch {
                // Only the queue's own rule refuses one submit alone; any other failure (the disk, SQLite, or
                // SQLite ending the transaction) fails the whole group.
                guard db.isInTransaction, error.code == .idempotencyKeyReused else { throw error }
                results.append(.failure(error))
            }
        }
        return results
    }

    /// The outcomes of a group, in the open transaction. Throws (failing the transaction) on a storage error.
    private static func completeEach(
        _ db: SQLiteConnection,
        _ group: [PendingCompletions]
    ) throws(RelayError) -> [[CompletionResult]] {
        var results: [[CompletionResult]] = []
        results.reserveCapacity(group.count)
        for pending in group {
            var each: [CompletionResult] = []
            each.reserveCapacity(pending.completions.count)
            for completion in pending.completions {
                each.append(try Self.completeOne(db, completion, owner: pending.owner, pending.nowMs))
            }
            results.append(each)
        }
        return results
    }

    private static func enqueueOne(
        _ db: SQLiteConnection,
        _ submit: NewSubmit,
        nowMs: Int64
    ) throws(RelayError) -> EnqueueOutcome {
        let earlier = try db.withStatement(
            "SELECT request_sha256, response FROM submissions WHERE user_id = ?1 AND idempotency_key = ?2"
        ) { s throws(RelayError) -> (digest: [UInt8], response: String)? in
            try s.bind(submit.userID, at: 1)
            try s.bind(submit.idempotencyKey, at: 2)
            guard try s.step() else { return nil }
            return (s.blob(0), s.text(1))
        }
        if let earlier {
            return try StorePolicy.replay(earlier.digest, earlier.response, for: submit)
        }
        for push in submit.pushes {
            try db.withStatement(
                """
                INSERT INTO pushes (push_id, user_id, device_id, envelope, state, attempts, next_attempt_at_ms,
                  enqueued_at_ms, completions, lease_owner, lease_expires_at_ms)
                VALUES (?1, ?2, ?3, ?4, CASE WHEN ?6 IS NULL THEN 'queued' ELSE 'leased' END,
                  CASE WHEN ?6 IS NULL THEN 0 ELSE 1 END, ?5, ?5, 0, ?6, ?7)
                """
            ) { s throws(RelayError) in
                try s.bind(push.pushID, at: 1)
                try s.bind(submit.userID, at: 2)
                try s.bind(push.deviceID, at: 3)
                try s.bind(push.envelope, at: 4)
                try s.bind(nowMs, at: 5)
                try s.bind(submit.lease?.owner, at: 6)
                try s.bind(submit.lease?.expiresAtMs, at: 7)
                try s.run()
            }
        }
        let outcome = StorePolicy.accepted(submit)
        try db.withStatement(
            """
            INSERT INTO submissions (user_id, idempotency_key, request_sha256, response, created_at_ms)
            VALUES (?1, ?2, ?3, ?4, ?5)
            """
        ) { s throws(RelayError) in
            try s.bind(submit.userID, at: 1)
            try s.bind(submit.idempotencyKey, at: 2)
            try s.bind(submit.requestDigest, at: 3)
            try s.bind(StorePolicy.encode(outcome.pushes), at: 4)
            try s.bind(nowMs, at: 5)
            try s.run()
        }
        return outcome
    }

    public func lease(
        owner: String,
        limit: Int,
        nowMs: Int64,
        leaseMs: Int64
    ) async throws(RelayError)
        -> [LeasedPush]
    {
        try await self.withConnection { db throws(RelayError) in
            try db.transaction { () throws(RelayError) -> [LeasedPush] in
                var leased = try db.withStatement(
                    """
                    UPDATE pushes SET state = 'leased', lease_owner = ?1, lease_expires_at_ms = ?2,
                      attempts = attempts + 1
                    WHERE seq IN (
                      SELECT seq FROM (
                        SELECT seq, due FROM (
                          SELECT seq, lease_expires_at_ms AS due FROM pushes
                          WHERE state = 'leased' AND lease_expires_at_ms <= ?3
                          ORDER BY lease_expires_at_ms, seq LIMIT ?4)
                        UNION ALL
                        SELECT seq, due FROM (
                          SELECT seq, next_attempt_at_ms AS due FROM pushes
                          WHERE state = 'queued' AND next_attempt_at_ms <= ?3
                          ORDER BY next_attempt_at_ms, seq LIMIT ?4)
                        ORDER BY due, seq LIMIT ?4))
                    RETURNING push_id, user_id, device_id, envelope, attempts, enqueued_at_ms
                    """
                ) { s throws(RelayError) -> [LeasedPush] in
                    try s.bind(owner, at: 1)
                    try s.bind(nowMs + leaseMs, at: 2)
                    try s.bind(nowMs, at: 3)
                    try s.bind(Int64(limit), at: 4)
                    var rows: [LeasedPush] = []
                    while try s.step() {
                        rows.append(
                            LeasedPush(
                                pushID: s.text(0),
                                userID: s.text(1),
                                deviceID: s.text(2),
                                envelope: s.blob(3),
                                attempts: Int(s.int64(4)),
                                enqueuedAtMs: s.int64(5),
                                address: nil
                            )
                        )
                    }
                    #if DEBUG
                    let steps = s.takeVMSteps()
                    self.leaseSteps.withLock { $0 = steps }
                    #endif
                    return rows
                }
                for index in leased.indices {
                    leased[index].address = try db.withStatement(
                        """
                        SELECT service, address, environment FROM devices
                        WHERE user_id = ?1 AND device_id = ?2 AND address IS NOT NULL
                          AND unregistered_at_ms IS NULL
                        """
                    ) { s throws(RelayError) -> RegisteredAddress? in
                        try s.bind(leased[index].userID, at: 1)
                        try s.bind(leased[index].deviceID, at: 2)
                        guard try s.step() else { return nil }
                        return RegisteredAddress(
                            push: PushAddress(service: PushService(rawValue: s.text(0)), address: s.text(1)),
                            environment: s.optionalText(2)
                        )
                    }
                }
                return leased.sorted { $0.enqueuedAtMs < $1.enqueuedAtMs }
            }
        }
    }

    public func complete(
        _ completions: [Completion],
        owner: String,
        nowMs: Int64
    ) async throws(RelayError)
        -> [CompletionResult]
    {
        // The outcomes join the next group commit, with the submits waiting by then (one sync to disk for all).
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<[CompletionResult], RelayError>, Never>) in
            self.pendingWrites.withLock {
                $0.completions.append(
                    PendingCompletions(completions: completions, owner: owner, nowMs: nowMs, continuation: continuation)
                )
            }
            self.queue.async { self.commitPendingWrites() }
        }
        return try result.get()
    }

    private static func completeOne(
        _ db: SQLiteConnection,
        _ completion: Completion,
        owner: String,
        _ nowMs: Int64
    )
        throws(RelayError) -> CompletionResult
    {
        let (pushID, outcome) = (completion.pushID, completion.outcome)
        let state = try db.withStatement(
            "SELECT state, user_id, device_id, lease_owner, attempts FROM pushes WHERE push_id = ?1"
        ) { s throws(RelayError) -> (state: String, userID: String, deviceID: String, owner: String?, attempts: Int)? in
            try s.bind(pushID, at: 1)
            guard try s.step() else { return nil }
            return (s.text(0), s.text(1), s.text(2), s.optionalText(3), Int(s.int64(4)))
        }
        guard let state else { return .alreadyCompleted }
        if state.state != PushState.queued.rawValue && state.state != PushState.leased.rawValue {
            if StorePolicy.sameLease(
                recordedOwner: state.owner,
                recordedAttempts: state.attempts,
                owner: owner,
                attempt: completion.attempt
            ) {
                return .recorded
            }
            try db.withStatement("UPDATE pushes SET completions = completions + 1 WHERE push_id = ?1") {
                s throws(RelayError) in
                try s.bind(pushID, at: 1)
                try s.run()
            }
            return .alreadyCompleted
        }
        let row = StorePolicy.row(for: outcome)
        try db.withStatement(
            """
            UPDATE pushes SET state = ?2, next_attempt_at_ms = COALESCE(?3, next_attempt_at_ms),
              service_status = ?4, service_reason = ?5, lease_expires_at_ms = NULL,
              lease_owner = CASE WHEN ?6 = 1 THEN ?8 ELSE NULL END,
              completed_at_ms = CASE WHEN ?6 = 1 THEN ?7 ELSE NULL END,
              completions = completions + ?6,
              envelope = CASE WHEN ?6 = 1 THEN NULL ELSE envelope END
            WHERE push_id = ?1
            """
        ) { s throws(RelayError) in
            try s.bind(pushID, at: 1)
            try s.bind(row.state.rawValue, at: 2)
            try s.bind(row.retryAtMs, at: 3)
            try s.bind(row.status.map(Int64.init), at: 4)
            try s.bind(row.reason, at: 5)
            try s.bind(row.final ? 1 : 0, at: 6)
            try s.bind(nowMs, at: 7)
            // A final row keeps the lease that completed it (owner, attempts): a completion of the same lease recorded
            // again is then told from another lease's.
            try s.bind(owner, at: 8)
            try s.run()
        }
        if let dead = StorePolicy.deadAddress(outcome) {
            try db.withStatement(
                """
                UPDATE devices SET unregistered_at_ms = ?4, failed_reason = ?5
                WHERE user_id = ?1 AND device_id = ?2 AND address = ?3 AND unregistered_at_ms IS NULL
                """
            ) { s throws(RelayError) in
                try s.bind(state.userID, at: 1)
                try s.bind(state.deviceID, at: 2)
                try s.bind(dead.address, at: 3)
                try s.bind(dead.atMs, at: 4)
                try s.bind(dead.failedReason, at: 5)
                try s.run()
            }
        }
        return .recorded
    }

    public func counts() async throws(RelayError) -> [PushState: Int] {
        try await self.withConnection { db throws(RelayError) in
            try db.withStatement("SELECT state, COUNT(*) FROM pushes GROUP BY state") { s throws(RelayError) in
                var counts: [PushState: Int] = [:]
                while try s.step() {
                    if let state = PushState(rawValue: s.text(0)) { counts[state] = Int(s.int64(1)) }
                }
                return counts
            }
        }
    }

    public func push(_ pushID: String) async throws(RelayError) -> PushRecord? {
        try await self.withConnection { db throws(RelayError) in
            try db.withStatement(
                """
                SELECT user_id, device_id, state, attempts, completions, service_status, service_reason
                FROM pushes WHERE push_id = ?1
                """
            ) { s throws(RelayError) -> PushRecord? in
                try s.bind(pushID, at: 1)
                guard try s.step() else { return nil }
                return PushRecord(
                    pushID: pushID,
                    userID: s.text(0),
                    deviceID: s.text(1),
                    state: PushState(rawValue: s.text(2)) ?? .failed,
                    attempts: Int(s.int64(3)),
                    completions: Int(s.int64(4)),
                    serviceStatus: s.optionalInt64(5).map(Int.init),
                    serviceReason: s.optionalText(6)
                )
            }
        }
    }

    public func deliveredLatenciesMs() async throws(RelayError) -> [Int64] {
        try await self.withConnection { db throws(RelayError) in
            try db.withStatement(
                "SELECT completed_at_ms - enqueued_at_ms FROM pushes WHERE state = 'delivered' ORDER BY 1"
            ) { s throws(RelayError) -> [Int64] in
                var values: [Int64] = []
                while try s.step() { values.append(s.int64(0)) }
                return values
            }
        }
    }

    public func purge(nowMs: Int64) async throws(RelayError) {
        try await self.withConnection { db throws(RelayError) in
            try db.transaction { () throws(RelayError) in
                try db.withStatement("DELETE FROM auth_nonces WHERE expires_at_ms <= ?1") { s throws(RelayError) in
                    try s.bind(nowMs, at: 1)
                    try s.run()
                }
                try db.withStatement("DELETE FROM submissions WHERE created_at_ms <= ?1") { s throws(RelayError) in
                    try s.bind(nowMs - StorePolicy.idempotencyWindowMs, at: 1)
                    try s.run()
                }
                try db.withStatement(StorePolicy.purgeCompletedSQL("?1")) { s throws(RelayError) in
                    try s.bind(nowMs - StorePolicy.completedRetentionMs, at: 1)
                    try s.run()
                }
            }
        }
    }

    /// Closes the database file once the operations already queued are done.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            self.queue.async {
                self.holder.connection = nil
                continuation.resume()
            }
        }
    }
}
