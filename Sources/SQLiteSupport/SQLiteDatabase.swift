// This module is the one place that wraps the sqlite3 C API for the filter's state and the relay's embedded store.
public import CSQLite

/// What a failed SQLite call was: the facts a caller turns into its own typed error (``SQLiteErrorMapping``).
public struct SQLiteFailure: Sendable {
    /// SQLite's extended result code (`SQLITE_MISUSE` for an empty statement, which SQLite does not report).
    public let resultCode: Int32
    /// The `errno` of the last failed system call SQLite made on this connection (0 when unknown).
    public let systemErrno: Int32
    /// What was being done: the SQL text, or "open PATH", or "bind N of SQL".
    public let operation: String
    /// SQLite's message (`sqlite3_errmsg`).
    public let message: String
    /// The database file.
    public let path: String

    /// The primary result code (the low byte of ``resultCode``), e.g. `SQLITE_IOERR` for `SQLITE_IOERR_FSYNC`.
    public var primaryCode: Int32 { resultCode & 0xff }

    public init(resultCode: Int32, systemErrno: Int32, operation: String, message: String, path: String) {
        self.resultCode = resultCode
        self.systemErrno = systemErrno
        self.operation = operation
        self.message = message
        self.path = path
    }
}

/// How one user of ``SQLiteDatabase`` types its errors: every failed call becomes one `Failure`, so the code that
/// runs statements throws its own typed error all the way (`throws(Failure)`) without converting at each call.
public protocol SQLiteErrorMapping {
    associatedtype Failure: Error
    /// The error to throw for `failure`.
    static func error(for failure: SQLiteFailure) -> Failure
}

/// One SQLite connection, owned by one store and used by one thread at a time (its owner's lock or queue).
///
/// Every sqlite3 return code goes through ``check(_:_:)``. Prepared statements are cached by their SQL text and
/// finalized when the connection closes. The members are `@inlinable` so that a store's calls are specialised for
/// its error type: this is on the filter's per-payload path.
public final class SQLiteDatabase<Errors: SQLiteErrorMapping> {
    public typealias Failure = Errors.Failure

    @usableFromInline let handle: OpaquePointer
    @usableFromInline var statements: [String: OpaquePointer] = [:]
    /// The database file.
    public let path: String

    /// Opens (creating if needed) the database file at `path`.
    public init(path: String) throws(Failure) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            let systemErrno = db.map { sqlite3_system_errno($0) } ?? 0
            if let db { sqlite3_close_v2(db) }
            throw Errors.error(
                for: SQLiteFailure(
                    resultCode: rc,
                    systemErrno: systemErrno,
                    operation: "open \(path)",
                    message: message,
                    path: path
                )
            )
        }
        self.handle = db
        self.path = path
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Throws a typed error unless `rc` is one of SQLite's success codes (OK, ROW, DONE).
    @inlinable
    public func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws(Failure) {
        guard rc != SQLITE_OK, rc != SQLITE_ROW, rc != SQLITE_DONE else { return }
        throw failure(rc, operation())
    }

    @usableFromInline
    func failure(_ rc: Int32, _ operation: String) -> Failure {
        Errors.error(
            for: SQLiteFailure(
                resultCode: rc,
                systemErrno: sqlite3_system_errno(handle),
                operation: operation,
                message: String(cString: sqlite3_errmsg(handle)),
                path: path
            )
        )
    }

    /// Runs SQL that returns no rows (may contain several statements).
    @inlinable
    public func execute(_ sql: String) throws(Failure) {
        try check(sqlite3_exec(handle, sql, nil, nil, nil), sql)
    }

    /// Runs `body` with the cached prepared statement for `sql`, reset and unbound afterwards.
    @inlinable
    public func withStatement<T>(
        _ sql: String,
        _ body: (inout SQLiteStatement<Errors>) throws(Failure) -> T
    ) throws(Failure) -> T {
        let raw = try prepared(sql)
        var statement = SQLiteStatement<Errors>(raw: raw, database: self, sql: sql)
        defer {
            sqlite3_reset(raw)
            sqlite3_clear_bindings(raw)
        }
        return try body(&statement)
    }

    /// The cached prepared statement for `sql`, prepared on first use.
    @inlinable
    func prepared(_ sql: String) throws(Failure) -> OpaquePointer {
        if let cached = statements[sql] { return cached }
        var prepared: OpaquePointer?
        try check(sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil), sql)
        guard let prepared else {
            throw Errors.error(
                for: SQLiteFailure(
                    resultCode: SQLITE_MISUSE,
                    systemErrno: 0,
                    operation: sql,
                    message: "empty SQL statement",
                    path: path
                )
            )
        }
        statements[sql] = prepared
        return prepared
    }

    /// The number of rows changed by the last INSERT, UPDATE or DELETE.
    @inlinable
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// The number of rows changed since the connection opened.
    @inlinable
    public var totalChanges: Int { Int(sqlite3_total_changes(handle)) }

    /// Whether a transaction is open on this connection (SQLite ends one by itself after some errors).
    @inlinable
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs SQL and ignores its outcome: a rollback after an error, where the first error is the one to report.
    public func executeIgnoringFailure(_ sql: String) {
        _ = sqlite3_exec(handle, sql, nil, nil, nil)
    }
}

/// A connection is used by one thread at a time, under its owner's lock or on its owner's queue.
@available(*, unavailable)
extension SQLiteDatabase: Sendable {}
