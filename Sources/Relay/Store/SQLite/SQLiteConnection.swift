// This folder is the only place in Relay that uses SQLite (through SQLiteSupport).
import CSQLite
import Foundation
import RelayClient
import SQLiteSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The relay's SQLite connection, owned by one ``SQLiteRelayStore`` and used only on its queue.
///
/// The statements run on the shared ``SQLiteDatabase`` with ``RelaySQLiteErrors``: every failed call is a
/// ``RelayError`` with code `storage-unavailable` or `storage-full`. This class adds the relay's transactions and
/// remembers a write refused for lack of space (the health endpoint reports it).
final class SQLiteConnection {
    private let database: SQLiteDatabase<RelaySQLiteErrors>
    /// The `storage-full` error of the last write transaction, when it failed for lack of space; nil again once a
    /// transaction that changed rows commits (the health endpoint answers 503 `storage-full` meanwhile).
    private(set) var lastWriteNoRoom: RelayError?

    /// Opens (creating if needed) the database file at `path`.
    init(path: String) throws(RelayError) {
        self.database = try SQLiteDatabase(path: path)
    }

    /// Runs SQL that returns no rows (may contain several statements).
    func execute(_ sql: String) throws(RelayError) {
        try database.execute(sql)
    }

    /// Runs `body` with the cached prepared statement for `sql`, reset and unbound afterwards.
    func withStatement<T>(
        _ sql: String,
        _ body: (inout SQLiteStatement<RelaySQLiteErrors>) throws(RelayError) -> T
    ) throws(RelayError) -> T {
        try database.withStatement(sql, body)
    }

    /// Runs `body` inside `BEGIN IMMEDIATE` … `COMMIT`, rolling back when it throws.
    ///
    /// A failure for lack of space is kept in ``lastWriteNoRoom`` until a transaction that changed rows commits (a
    /// transaction that changed nothing wrote nothing, so it says nothing about the room on the disk).
    func transaction<T>(_ body: () throws(RelayError) -> T) throws(RelayError) -> T {
        let changesBefore = database.totalChanges
        do {
            try execute("BEGIN IMMEDIATE")
            let value = try body()
            try execute("COMMIT")
            if database.totalChanges != changesBefore { self.lastWriteNoRoom = nil }
            return value
        } catch {
            if database.isInTransaction { database.executeIgnoringFailure("ROLLBACK") }
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
                database.executeIgnoringFailure("ROLLBACK TO one_request; RELEASE one_request")
            }
            throw error
        }
    }

    /// Whether a transaction is open (SQLite ends one by itself after some errors).
    var isInTransaction: Bool { database.isInTransaction }

    /// The number of rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int { database.changes }
}

/// How a failed SQLite call becomes a ``RelayError``: `storage-full` when the disk has no room for a write,
/// `storage-unavailable` with SQLite's reason and what to do otherwise.
enum RelaySQLiteErrors: SQLiteErrorMapping {
    typealias Failure = RelayError

    static func error(for failure: SQLiteFailure) -> RelayError {
        if failure.resultCode == SQLITE_MISUSE {
            return RelayError(.internalError, "\(failure.message): \(failure.operation)")
        }
        if failure.primaryCode == SQLITE_IOERR, !isFull(failure.resultCode, systemErrno: failure.systemErrno),
            let room = noRoom(failure.path)
        {
            // SQLite does not always keep the errno of a refused write: ask the file system and the limits.
            return error(failure.resultCode, failure.operation, "\(failure.message); \(room)", systemErrno: ENOSPC)
        }
        return error(failure.resultCode, failure.operation, failure.message, systemErrno: failure.systemErrno)
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
