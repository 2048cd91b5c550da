// This folder is the only place in Relay that touches the sqlite3 C API.
import CSQLite
import Foundation
import RelayClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One SQLite connection, owned by one ``SQLiteRelayStore`` and used only under its lock.
///
/// Every sqlite3 return code goes through ``check(_:_:)``, which turns it into a ``RelayError`` with code
/// `storage-unavailable`. Prepared statements are cached by their SQL text and finalized when the connection closes.
final class SQLiteConnection {
    private let handle: OpaquePointer
    /// The database file (its folder's free space and the process's file-size limit explain a failed write).
    private let path: String
    private var statements: [String: OpaquePointer] = [:]
    /// The `storage-full` error of the last write transaction, when it failed for lack of space; nil again once a
    /// transaction that changed rows commits (the health endpoint answers 503 `storage-full` meanwhile).
    private(set) var lastWriteNoRoom: RelayError?

    /// Opens (creating if needed) the database file at `path`.
    init(path: String) throws(RelayError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw Self.error(rc, "open \(path)", message)
        }
        self.handle = db
        self.path = path
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Throws a typed error unless `rc` is one of SQLite's success codes (OK, ROW, DONE).
    func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws(RelayError) {
        guard rc != SQLITE_OK, rc != SQLITE_ROW, rc != SQLITE_DONE else { return }
        let systemErrno = sqlite3_system_errno(handle)
        let message = String(cString: sqlite3_errmsg(handle))
        if rc & 0xff == SQLITE_IOERR, !Self.isFull(rc, systemErrno: systemErrno), let room = Self.noRoom(self.path) {
            // SQLite does not always keep the errno of a refused write: ask the file system and the limits.
            throw Self.error(rc, operation(), "\(message); \(room)", systemErrno: ENOSPC)
        }
        throw Self.error(rc, operation(), message, systemErrno: systemErrno)
    }

    /// Why the database's files cannot grow, if they cannot: the folder's file system has (almost) no free blocks
    /// for this user, or a file is at the process's file-size limit (RLIMIT_FSIZE). nil when there is room.
    static func noRoom(_ path: String) -> String? {
        let folder =
            (path as NSString).deletingLastPathComponent.isEmpty
            ? "." : (path as NSString).deletingLastPathComponent
        var fs = statvfs()
        if statvfs(folder, &fs) == 0 {
            let free = UInt64(fs.f_bavail) * UInt64(fs.f_frsize)
            if free < 1 << 20 { return "the file system of \(folder) has \(free) bytes free" }
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max {
            for file in [path, path + "-wal", path + "-journal"] {
                var info = stat()
                // A page and a WAL frame header more would not fit.
                if stat(file, &info) == 0, UInt64(info.st_size) + 65_536 + 24 > UInt64(limit.rlim_cur) {
                    return "\(file) is at this process's file-size limit (RLIMIT_FSIZE \(limit.rlim_cur) bytes)"
                }
            }
        }
        return nil
    }

    /// Runs SQL that returns no rows (may contain several statements).
    func execute(_ sql: String) throws(RelayError) {
        try check(sqlite3_exec(handle, sql, nil, nil, nil), sql)
    }

    /// Runs `body` with the cached prepared statement for `sql`, reset and unbound afterwards.
    func withStatement<T>(
        _ sql: String,
        _ body: (inout SQLiteStatement) throws(RelayError) -> T
    ) throws(RelayError) -> T {
        let raw: OpaquePointer
        if let cached = statements[sql] {
            raw = cached
        } else {
            var prepared: OpaquePointer?
            try check(sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil), sql)
            guard let prepared else { throw RelayError(.internalError, "empty SQL statement: \(sql)") }
            statements[sql] = prepared
            raw = prepared
        }
        var statement = SQLiteStatement(raw: raw, connection: self, sql: sql)
        defer {
            sqlite3_reset(raw)
            sqlite3_clear_bindings(raw)
        }
        return try body(&statement)
    }

    /// Runs `body` inside `BEGIN IMMEDIATE` … `COMMIT`, rolling back when it throws.
    ///
    /// A failure for lack of space is kept in ``lastWriteNoRoom`` until a transaction that changed rows commits (a
    /// transaction that changed nothing wrote nothing, so it says nothing about the room on the disk).
    func transaction<T>(_ body: () throws(RelayError) -> T) throws(RelayError) -> T {
        let changesBefore = sqlite3_total_changes(handle)
        do {
            try execute("BEGIN IMMEDIATE")
            let value = try body()
            try execute("COMMIT")
            if sqlite3_total_changes(handle) != changesBefore { self.lastWriteNoRoom = nil }
            return value
        } catch {
            if sqlite3_get_autocommit(handle) == 0 { _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
            if error.code == .storageFull { self.lastWriteNoRoom = error }
            throw error
        }
    }

    /// Runs `body` inside a savepoint of the open transaction: its writes are released into the transaction, or
    /// rolled back alone when it throws (if SQLite has not already ended the transaction).
    func savepoint<T>(_ body: () throws(RelayError) -> T) throws(RelayError) -> T {
        try execute("SAVEPOINT one_request")
        do {
            let value = try body()
            try execute("RELEASE one_request")
            return value
        } catch {
            if self.isInTransaction {
                _ = sqlite3_exec(handle, "ROLLBACK TO one_request; RELEASE one_request", nil, nil, nil)
            }
            throw error
        }
    }

    /// Whether a transaction is open (SQLite ends one by itself after some errors).
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// The number of rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Whether a failed write means the file system has no room: SQLITE_FULL, or an I/O error whose `errno` is
    /// ENOSPC, EDQUOT or EFBIG (a file-size limit: SQLite reports a write refused outright as an I/O error and a
    /// short write as SQLITE_FULL).
    static func isFull(_ rc: Int32, systemErrno: Int32) -> Bool {
        let primary = rc & 0xff
        if primary == SQLITE_FULL { return true }
        return primary == SQLITE_IOERR && [ENOSPC, EDQUOT, EFBIG].contains(systemErrno)
    }

    static func error(_ rc: Int32, _ operation: String, _ sqliteMessage: String, systemErrno: Int32 = 0) -> RelayError {
        let primary = rc & 0xff
        if Self.isFull(rc, systemErrno: systemErrno) {
            return RelayError(
                .storageFull,
                "the disk of the SQLite database is full (\(sqliteMessage), code \(rc), errno \(systemErrno)) during "
                    + "'\(operation.prefix(80))': nothing of this request was stored; free space on that disk (or move "
                    + "the database to a larger one) and send again. Pushes already accepted stay queued and are "
                    + "delivered once the relay can write again",
                retryAfterSeconds: 30
            )
        }
        let advice: String
        switch primary {
        case SQLITE_BUSY, SQLITE_LOCKED:
            advice = "another process holds the database locked: run one relay per SQLite file (PostgreSQL for several)"
        case SQLITE_NOTADB, SQLITE_CORRUPT: advice = "the file is not a readable SQLite database: move it aside"
        case SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM: advice = "check the path and its permissions"
        default: advice = "check the database file's disk and permissions"
        }
        let errnoText = systemErrno != 0 ? ", errno \(systemErrno)" : ""
        return RelayError(
            .storageUnavailable,
            "SQLite failed during '\(operation.prefix(80))': \(sqliteMessage) (code \(rc)\(errnoText)); \(advice)",
            retryAfterSeconds: 1
        )
    }
}

/// A prepared statement borrowed from ``SQLiteConnection`` for one execution.
///
/// Binding indexes are 1-based and column indexes 0-based, as in the C API.
struct SQLiteStatement {
    let raw: OpaquePointer
    unowned let connection: SQLiteConnection
    let sql: String

    /// SQLite's `SQLITE_TRANSIENT`: SQLite copies the bound bytes before the call returns.
    private static var transient: sqlite3_destructor_type { unsafeBitCast(-1, to: sqlite3_destructor_type.self) }

    mutating func bind(_ value: Int64, at index: Int32) throws(RelayError) {
        try connection.check(sqlite3_bind_int64(raw, index, value), "bind \(index) of \(sql)")
    }

    mutating func bind(_ value: Int64?, at index: Int32) throws(RelayError) {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    mutating func bind(_ value: String, at index: Int32) throws(RelayError) {
        try connection.check(sqlite3_bind_text(raw, index, value, -1, Self.transient), "bind \(index) of \(sql)")
    }

    mutating func bind(_ value: String?, at index: Int32) throws(RelayError) {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    mutating func bindNull(at index: Int32) throws(RelayError) {
        try connection.check(sqlite3_bind_null(raw, index), "bind \(index) of \(sql)")
    }

    mutating func bind(_ bytes: [UInt8], at index: Int32) throws(RelayError) {
        let rc = bytes.withUnsafeBytes { buffer in
            // A zero-length blob needs a non-nil pointer or SQLite stores NULL.
            sqlite3_bind_blob(
                raw,
                index,
                buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                Int32(buffer.count),
                Self.transient
            )
        }
        try connection.check(rc, "bind \(index) of \(sql)")
    }

    /// Steps once; returns true when a row is available, false when the statement is done.
    mutating func step() throws(RelayError) -> Bool {
        let rc = sqlite3_step(raw)
        try connection.check(rc, sql)
        return rc == SQLITE_ROW
    }

    /// Steps a statement that returns no rows to completion.
    mutating func run() throws(RelayError) {
        while try step() {}
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }

    /// The virtual-machine steps this statement ran since the last call (SQLite's own count of its work; tests).
    func takeVMSteps() -> Int { Int(sqlite3_stmt_status(raw, Int32(SQLITE_STMTSTATUS_VM_STEP), 1)) }

    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(raw, column) else { return "" }
        let count = Int(sqlite3_column_bytes(raw, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }

    func blob(_ column: Int32) -> [UInt8] {
        guard let pointer = sqlite3_column_blob(raw, column) else { return [] }
        let count = Int(sqlite3_column_bytes(raw, column))
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
