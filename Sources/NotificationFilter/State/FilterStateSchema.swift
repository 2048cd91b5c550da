/// The schema of the filter's state file and how an existing file is recognised and upgraded.
///
/// A state file is recognised by `PRAGMA application_id` (``applicationID``) and versioned by
/// `PRAGMA user_version`. A new, empty file gets the current schema; a file of ours with an older
/// version is migrated in one transaction; a newer version or any other SQLite file is refused.
enum FilterStateSchema {
    /// "E2EF" in ASCII: marks a file as this filter's state.
    static let applicationID: Int64 = 0x4532_4546
    /// The schema version this build writes.
    static let currentVersion: Int64 = 5

    /// The DDL of version 1. Call ids are canonical UUID strings; message ids 16-byte blobs.
    static let version1 = """
        CREATE TABLE replay (
            account TEXT NOT NULL,
            message_id BLOB NOT NULL CHECK (length(message_id) = 16),
            sent_at_ms INTEGER NOT NULL,
            PRIMARY KEY (account, message_id)
        ) WITHOUT ROWID;
        CREATE INDEX replay_by_sent_at ON replay (sent_at_ms);
        CREATE TABLE call_state (
            account TEXT NOT NULL,
            call_id TEXT NOT NULL,
            state TEXT NOT NULL,
            updated_at_ms INTEGER NOT NULL,
            end_reason TEXT,
            PRIMARY KEY (account, call_id)
        ) WITHOUT ROWID;
        CREATE INDEX call_state_by_updated_at ON call_state (updated_at_ms);
        CREATE TABLE early_cancel (
            account TEXT NOT NULL,
            call_id TEXT NOT NULL,
            reason TEXT NOT NULL,
            at_ms INTEGER NOT NULL,
            PRIMARY KEY (account, call_id)
        ) WITHOUT ROWID;
        CREATE TABLE missed_call (
            account TEXT NOT NULL,
            call_id TEXT NOT NULL,
            caller_handle TEXT,
            display_name TEXT,
            at_ms INTEGER NOT NULL,
            reason TEXT NOT NULL,
            PRIMARY KEY (account, call_id)
        ) WITHOUT ROWID;
        CREATE TABLE decision_log (
            seq INTEGER PRIMARY KEY,
            line TEXT NOT NULL
        );
        CREATE TABLE spool_progress (
            path TEXT PRIMARY KEY NOT NULL,
            byte_offset INTEGER NOT NULL CHECK (byte_offset >= 0),
            last_seq INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE pending_payload (
            seq INTEGER PRIMARY KEY,
            payload TEXT NOT NULL,
            enqueued_at_ms INTEGER NOT NULL
        );
        """

    /// Version 2: message ids are remembered per sender, so one contact cannot silence another's message by
    /// reusing its id. Rows of version 1 keep an empty sender: they stand for "any sender" until they age out.
    static let version2 = """
        CREATE TABLE replay_v2 (
            account TEXT NOT NULL,
            sender TEXT NOT NULL,
            message_id BLOB NOT NULL CHECK (length(message_id) = 16),
            sent_at_ms INTEGER NOT NULL,
            PRIMARY KEY (account, sender, message_id)
        ) WITHOUT ROWID;
        INSERT INTO replay_v2 (account, sender, message_id, sent_at_ms)
            SELECT account, '', message_id, sent_at_ms FROM replay;
        DROP TABLE replay;
        ALTER TABLE replay_v2 RENAME TO replay;
        CREATE INDEX replay_by_sent_at ON replay (sent_at_ms);
        """

    /// Version 3: a call remembers who invited (only that user's cancel ends it), and a cancel that came before
    /// its invite remembers who sent it (it cancels only that user's invite). Rows of older versions have no
    /// caller (NULL) or an empty sender: they match any user, as before.
    static let version3 = """
        ALTER TABLE call_state ADD COLUMN caller TEXT;
        CREATE TABLE early_cancel_v3 (
            account TEXT NOT NULL,
            call_id TEXT NOT NULL,
            sender TEXT NOT NULL,
            reason TEXT NOT NULL,
            at_ms INTEGER NOT NULL,
            PRIMARY KEY (account, call_id, sender)
        ) WITHOUT ROWID;
        INSERT INTO early_cancel_v3 (account, call_id, sender, reason, at_ms)
            SELECT account, call_id, '', reason, at_ms FROM early_cancel;
        DROP TABLE early_cancel;
        ALTER TABLE early_cancel_v3 RENAME TO early_cancel;
        """

    /// Version 4: the call engine's tables join the versioned schema (before, the engine created them itself when
    /// it started): ringing calls with their deadlines, the call-event outbox and its pruned count, the user's
    /// answers and declines, callers, and declines from the caller's other devices. `IF NOT EXISTS`, because a
    /// version 3 file that an engine opened already has them, with these definitions.
    static let version4 = """
        CREATE TABLE IF NOT EXISTS call_ring (
            account TEXT NOT NULL, call_id TEXT NOT NULL, deadline_ms INTEGER NOT NULL,
            caller_handle TEXT NOT NULL, display_name TEXT NOT NULL, has_video INTEGER NOT NULL,
            PRIMARY KEY (account, call_id)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS event_outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT, event TEXT NOT NULL, account TEXT NOT NULL,
            call_id TEXT NOT NULL, line TEXT NOT NULL, UNIQUE (event, account, call_id));
        CREATE TABLE IF NOT EXISTS event_outbox_pruned (
            id INTEGER PRIMARY KEY CHECK (id = 1), count INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS call_action (
            id INTEGER PRIMARY KEY AUTOINCREMENT, account TEXT NOT NULL, call_id TEXT NOT NULL,
            action TEXT NOT NULL, at_ms INTEGER NOT NULL, deadline_ms INTEGER NOT NULL,
            caller_handle TEXT NOT NULL, display_name TEXT NOT NULL, has_video INTEGER NOT NULL,
            applied INTEGER NOT NULL DEFAULT 0, UNIQUE (account, call_id, action));
        CREATE TABLE IF NOT EXISTS call_caller (
            account TEXT NOT NULL, call_id TEXT NOT NULL, caller_handle TEXT NOT NULL, display_name TEXT NOT NULL,
            PRIMARY KEY (account, call_id)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS remote_decline (
            account TEXT NOT NULL, call_id TEXT NOT NULL, by_user TEXT NOT NULL, by_device TEXT,
            at_ms INTEGER NOT NULL, PRIMARY KEY (account, call_id)) WITHOUT ROWID;
        """

    /// Version 5: a call's caller row also keeps whether the call rang with video, so a restart restores a call
    /// whose end event was lost (docs/FAILURE-MODES.md item 11) from the state alone, as it rang. Rows of older
    /// versions take it from the call's ring while it still rings; for a call no longer ringing it is not known
    /// (NULL), and such a call is restored as audio, as before.
    static let version5 = """
        ALTER TABLE call_caller ADD COLUMN has_video INTEGER;
        UPDATE call_caller SET has_video = (
            SELECT r.has_video FROM call_ring r
            WHERE r.account = call_caller.account AND r.call_id = call_caller.call_id);
        """

    /// Makes `database` hold the current schema, or throws if it is not ours to change.
    static func prepare(_ database: StateDatabase, path: String) throws(FilterError) {
        let appID = try database.withStatement("PRAGMA application_id") { statement throws(FilterError) in
            try statement.step() ? statement.int64(0) : 0
        }
        let version = try database.withStatement("PRAGMA user_version") { statement throws(FilterError) in
            try statement.step() ? statement.int64(0) : 0
        }
        let objectCount = try database.withStatement("SELECT count(*) FROM sqlite_schema") {
            statement throws(FilterError) in
            try statement.step() ? statement.int64(0) : 0
        }
        if appID == 0 && version == 0 && objectCount == 0 {
            try migrate(database, from: 0)
            return
        }
        guard appID == applicationID else {
            throw FilterError(
                code: .foreignDatabase,
                message: "\(path) is an SQLite database of another application (application_id \(appID)); "
                    + "point the filter at its own state file"
            )
        }
        guard version <= currentVersion else {
            throw FilterError(
                code: .schemaTooNew,
                message: "\(path) has state schema version \(version) but this filter knows up to "
                    + "\(currentVersion); upgrade the filter or use a new state file"
            )
        }
        if version < currentVersion {
            try migrate(database, from: version)
        }
    }

    private static func migrate(_ database: StateDatabase, from version: Int64) throws(FilterError) {
        try database.execute("BEGIN IMMEDIATE")
        do {
            if version < 1 {
                try database.execute(version1)
            }
            if version < 2 {
                try database.execute(version2)
            }
            if version < 3 {
                try database.execute(version3)
            }
            if version < 4 {
                try database.execute(version4)
            }
            if version < 5 {
                try database.execute(version5)
            }
            // PRAGMA values cannot be bound; both are integer constants of this file.
            try database.execute("PRAGMA application_id = \(applicationID)")
            try database.execute("PRAGMA user_version = \(currentVersion)")
            try database.execute("COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }
}
