import PushTransport
import RelayClient

/// The relay's schema (docs/RELAY.md "Storage"): one ordered list of migrations for both stores, each with its
/// version. A store applies, in order, each migration newer than the version its database records, each in a
/// transaction of its own that also records the migration's version; a database whose version is newer than this
/// build knows is refused. Changing the schema is adding one entry at the end of ``migrations``, with its SQL written
/// once through ``Dialect`` where the two dialects differ (types, the auto-incrementing key).
///
/// Where the version is recorded: SQLite, in `PRAGMA user_version`, with `PRAGMA application_id` marking the file as
/// the relay's (as the filter's state file); PostgreSQL, in the table `relay_schema`, one row per applied version,
/// written under the advisory lock that serialises migrations of instances starting together.
enum RelaySchema {
    /// "E2ER" in ASCII: marks an SQLite file as this relay's database.
    static let applicationID: Int64 = 0x4532_4552

    /// The SQL differences between the stores.
    enum Dialect: Sendable {
        case sqlite, postgres

        /// Bytes: `BLOB` or `BYTEA`.
        var blob: String { self == .sqlite ? "BLOB" : "BYTEA" }
        /// A 64-bit integer: `INTEGER` or `BIGINT`.
        var integer: String { self == .sqlite ? "INTEGER" : "BIGINT" }
        /// An auto-incrementing 64-bit primary key.
        var serialKey: String { self == .sqlite ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY" }
    }

    /// One statement of a migration.
    enum Statement: Sendable, Equatable {
        /// SQL run as it is.
        case sql(String)
        /// Adds a column unless the table has it (PostgreSQL's `ADD COLUMN IF NOT EXISTS`; SQLite has no such
        /// clause, its store looks first). Only version 1 needs it: later migrations run exactly once.
        case addColumnIfMissing(table: String, column: String, definition: String)
        /// Replaces each APNs body in `pushes.envelope` by the envelope it carries (``envelope(fromAPNsBody:)``):
        /// rows read and rewritten by the store, as SQL cannot parse the body.
        case unframeQueuedAPNsBodies
    }

    /// One version of the schema: what turns the version before it into this one.
    struct Migration: Sendable {
        var version: Int64
        var statements: @Sendable (Dialect) -> [Statement]
    }

    /// The tables of version 1, that a database made before versions were recorded has (some of).
    static let version1Tables: Set<String> = [
        "lists", "devices", "delivery_tokens", "auth_nonces", "submissions", "pushes",
    ]

    /// Every version, oldest first; versions count up from 1 without gaps.
    static let migrations: [Migration] = [
        // Version 1: the schema of the relay before versions were recorded. It is written with
        // `IF NOT EXISTS` / `IF EXISTS` because it also adopts a database made then, which has all of it or an
        // older shape of it: devices without failed_reason, the queue's earlier indexes.
        Migration(version: 1) { d in
            [
                .sql(
                    """
                    CREATE TABLE IF NOT EXISTS lists (user_id TEXT PRIMARY KEY, user_signing_key \(d.blob) NOT NULL,
                      list_version \(d.integer) NOT NULL, list_digest \(d.blob) NOT NULL, list_json \(d.blob) NOT NULL,
                      updated_at_ms \(d.integer) NOT NULL)
                    """
                ),
                .sql(
                    """
                    CREATE TABLE IF NOT EXISTS devices (user_id TEXT NOT NULL, device_id TEXT NOT NULL,
                      position \(d.integer) NOT NULL, signing_key \(d.blob) NOT NULL, device_token TEXT, topic TEXT,
                      environment TEXT, registered_at_ms \(d.integer), unregistered_at_ms \(d.integer),
                      failed_reason TEXT, PRIMARY KEY (user_id, device_id))
                    """
                ),
                // Databases made before devices had failed_reason get the column.
                .addColumnIfMissing(table: "devices", column: "failed_reason", definition: "TEXT"),
                .sql(
                    """
                    CREATE TABLE IF NOT EXISTS delivery_tokens (token_sha256 \(d.blob) PRIMARY KEY,
                      user_id TEXT NOT NULL, created_at_ms \(d.integer) NOT NULL)
                    """
                ),
                .sql(
                    """
                    CREATE TABLE IF NOT EXISTS auth_nonces (nonce \(d.blob) PRIMARY KEY,
                      expires_at_ms \(d.integer) NOT NULL)
                    """
                ),
                .sql(
                    """
                    CREATE TABLE IF NOT EXISTS submissions (user_id TEXT NOT NULL, idempotency_key TEXT NOT NULL,
                      request_sha256 \(d.blob) NOT NULL, response TEXT NOT NULL, created_at_ms \(d.integer) NOT NULL,
                      PRIMARY KEY (user_id, idempotency_key))
                    """
                ),
                .sql(
                    """
                    CREATE TABLE IF NOT EXISTS pushes (seq \(d.serialKey), push_id TEXT NOT NULL UNIQUE,
                      user_id TEXT NOT NULL, device_id TEXT NOT NULL, body \(d.blob), state TEXT NOT NULL,
                      attempts \(d.integer) NOT NULL, next_attempt_at_ms \(d.integer) NOT NULL, lease_owner TEXT,
                      lease_expires_at_ms \(d.integer), enqueued_at_ms \(d.integer) NOT NULL,
                      completed_at_ms \(d.integer), apns_status \(d.integer), apns_reason TEXT,
                      completions \(d.integer) NOT NULL)
                    """
                ),
                // The queue's indexes. A lease reads the pushes that fell due earliest (a queued push at its next
                // attempt, a leased one when its lease expired; ties in queue order), each kind from a partial index
                // ordered by that time, and stops at its limit. So a lease reads neither the completed rows of the
                // past hour, nor the due backlog past its limit, nor the retries still waiting for their time (after
                // an APNs outage, thousands). A database made by an older relay may hold the indexes this replaces,
                // which are dropped: one on (state, next_attempt_at_ms) (`pushes_due`), with which every lease read
                // and sorted the whole due backlog (SQLite) or scanned every completed row before the first due one
                // (PostgreSQL), and partial indexes in queue order (`pushes_queued`, `pushes_leased`), with which a
                // lease stepped over every waiting retry.
                .sql("DROP INDEX IF EXISTS pushes_due"),
                .sql("DROP INDEX IF EXISTS pushes_queued"),
                .sql("DROP INDEX IF EXISTS pushes_leased"),
                .sql(
                    "CREATE INDEX IF NOT EXISTS pushes_queued_due ON pushes (next_attempt_at_ms, seq) WHERE state = 'queued'"
                ),
                .sql(
                    "CREATE INDEX IF NOT EXISTS pushes_leased_due ON pushes (lease_expires_at_ms, seq) WHERE state = 'leased'"
                ),
            ]
        },
        // Version 2: the queue holds envelopes, not APNs bodies; the push service's deliverer frames each at delivery
        // (docs/RELAY.md "Queue and delivery"), so a second push service needs no second kind of row. The column is
        // renamed, so a relay of version 1 still running against a shared PostgreSQL database fails to lease or
        // enqueue (and says so) instead of sending envelopes to APNs as bodies.
        //
        // Rows already queued are converted here rather than marked with the framing they hold: the APNs body is a
        // deterministic function of the envelope (framing the converted envelope gives back the same bytes), so the
        // conversion loses nothing, and the deliverers then never carry a second, legacy path that would have to
        // stay as long as a database of version 1 might be migrated.
        Migration(version: 2) { _ in
            [
                .sql("ALTER TABLE pushes RENAME COLUMN body TO envelope"),
                .unframeQueuedAPNsBodies,
            ]
        },
        // Version 3: a device's push address is a service and an opaque address (docs/PROTOCOL.md §11.1), not APNs'
        // token and topic: registered APNs addresses become service 'apns', address '<topic>/<device token>'. The
        // queue's status columns lose their APNs name (a deliverer of another service fills them too). A relay of
        // version 2 on a shared PostgreSQL database then fails on the missing columns instead of reading a half.
        Migration(version: 3) { _ in
            [
                .sql("ALTER TABLE devices ADD COLUMN service TEXT"),
                .sql("ALTER TABLE devices ADD COLUMN address TEXT"),
                .sql(
                    """
                    UPDATE devices SET service = 'apns', address = topic || '/' || device_token
                    WHERE device_token IS NOT NULL AND topic IS NOT NULL
                    """
                ),
                .sql("ALTER TABLE devices DROP COLUMN device_token"),
                .sql("ALTER TABLE devices DROP COLUMN topic"),
                .sql("ALTER TABLE pushes RENAME COLUMN apns_status TO service_status"),
                .sql("ALTER TABLE pushes RENAME COLUMN apns_reason TO service_reason"),
            ]
        },
    ]

    /// The envelope that the APNs body `body` (a row of version 1) carries, or nil when it carries none.
    ///
    /// A row that carries none (which the relay of version 1 never wrote: it framed envelopes it had checked) is
    /// kept as it is: delivering it fails the push as a malformed envelope rather than failing the migration and the
    /// relay's start.
    static func envelope(fromAPNsBody body: [UInt8]) -> [UInt8]? {
        try? APNsAlertTransport.envelope(fromBody: body).serialized
    }

    /// The schema version this build writes: the last migration's.
    static var currentVersion: Int64 { migrations.last?.version ?? 0 }

    /// The migration that follows `version` in a database described as `database`, or nil when it is current.
    ///
    /// - Throws: `storage-unavailable` (the relay exits 69) when `version` is newer than this build knows.
    static func migration(after version: Int64, database: String) throws(RelayError) -> Migration? {
        guard version <= currentVersion else {
            throw RelayError(
                .storageUnavailable,
                "\(database) has relay schema version \(version) but this relay knows versions up to "
                    + "\(currentVersion): a newer relay has migrated it; run that relay version (or a newer one) "
                    + "on this database, or point this relay at another database"
            )
        }
        return migrations.first { $0.version > version }
    }
}
