// This folder is the only place in NotificationFilter that uses SQLite (through SQLiteSupport).
import CSQLite
import SQLiteSupport

/// The state file's connection, owned by exactly one ``FilterStateStore`` and used only under its lock: its
/// statements throw ``FilterError``.
typealias StateDatabase = SQLiteDatabase<FilterStateSQLiteErrors>

/// How a failed SQLite call becomes a ``FilterError``.
enum FilterStateSQLiteErrors: SQLiteErrorMapping {
    typealias Failure = FilterError

    static func error(for failure: SQLiteFailure) -> FilterError {
        switch failure.primaryCode {
        case SQLITE_NOTADB, SQLITE_CORRUPT:
            return FilterError(
                code: .corruptDatabase,
                message: "the state file is not a readable SQLite database (\(failure.message)) during "
                    + "'\(failure.operation)'; move it aside and start with a new state file",
                sqliteResultCode: failure.resultCode
            )
        case SQLITE_MISUSE:
            return .invalidArgument("\(failure.message): \(failure.operation)")
        default:
            return FilterError(
                code: .sqlite,
                message: "SQLite failed during '\(failure.operation)': \(failure.message); check the state file's "
                    + "disk, permissions and that no other process holds it locked",
                sqliteResultCode: failure.resultCode
            )
        }
    }
}
