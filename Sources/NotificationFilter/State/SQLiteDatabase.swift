// This folder is the only place in NotificationFilter that touches the sqlite3 C API.
import CSQLite
import Logging

/// One SQLite connection, owned by exactly one ``FilterStateStore`` and used only under its lock.
///
/// Every sqlite3 return code goes through ``check(_:_:)``, which turns it into a ``FilterStateError``.
/// Prepared statements are cached by their SQL text and finalized when the connection closes.
final class SQLiteDatabase {
    private let handle: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    /// Opens (creating if needed) the database file at `path`.
    init(path: String) throws(FilterStateError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw Self.error(rc, "open \(path)", message)
        }
        self.handle = db
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Throws a typed error unless `rc` is one of SQLite's success codes (OK, ROW, DONE).
    func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws(FilterStateError) {
        guard rc != SQLITE_OK, rc != SQLITE_ROW, rc != SQLITE_DONE else { return }
        throw Self.error(rc, operation(), String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs SQL that returns no rows (may contain several statements).
    func execute(_ sql: String) throws(FilterStateError) {
        try check(sqlite3_exec(handle, sql, nil, nil, nil), sql)
    }

    /// Runs `body` with the cached prepared statement for `sql`, reset and unbound afterwards.
    func withStatement<T>(
        _ sql: String,
        _ body: (inout SQLiteStatement) throws(FilterStateError) -> T
    ) throws(FilterStateError) -> T {
        let raw: OpaquePointer
        if let cached = statements[sql] {
            raw = cached
        } else {
            var prepared: OpaquePointer?
            try check(sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil), sql)
            guard let prepared else {
                throw FilterStateError.invalidArgument("empty SQL statement: \(sql)")
            }
            statements[sql] = prepared
            raw = prepared
        }
        var statement = SQLiteStatement(raw: raw, database: self, sql: sql)
        defer {
            sqlite3_reset(raw)
            sqlite3_clear_bindings(raw)
        }
        return try body(&statement)
    }

    /// The number of rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Whether a transaction is open on this connection.
    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    static func error(_ rc: Int32, _ operation: String, _ sqliteMessage: String) -> FilterStateError {
        let primary = rc & 0xff
        if primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT {
            return FilterStateError(
                code: .corruptDatabase,
                message: "the state file is not a readable SQLite database (\(sqliteMessage)) during '\(operation)'; "
                    + "move it aside and start with a new state file",
                sqliteResultCode: rc
            )
        }
        return FilterStateError(
            code: .sqlite,
            message: "SQLite failed during '\(operation)': \(sqliteMessage); check the state file's disk, "
                + "permissions and that no other process holds it locked",
            sqliteResultCode: rc
        )
    }
}
