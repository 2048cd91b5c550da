import E2EECore
import Locking
public import Logging
import SystemPackage

/// The filter's durable state: one SQLite file, changed only in whole transactions.
///
/// The file is opened in WAL mode with `synchronous=FULL`, so a transaction that returned is on
/// disk and a process killed at any moment (SIGKILL, power loss) leaves the state as of the last
/// committed transaction: nothing depends on a clean shutdown. Everything the engine changes for
/// one payload goes into one ``transaction(_:)``.
///
/// The store is `Sendable`: one connection guarded by a `PThreadMutex`. Calls block the calling thread for
/// the duration of the transaction (a few SQLite statements and one fsync), which keeps the engine's
/// per-payload work atomic without actor reentrancy.
public final class FilterStateStore: Sendable {
    private let database: PThreadMutex<StateDatabase>
    private let logger: Logger
    /// The path of the state file.
    public let path: String

    /// Opens the state file at `path`, creating it and its schema if it does not exist.
    ///
    /// - Parameters:
    ///   - path: The SQLite file (its `-wal` and `-shm` companions live beside it).
    ///   - busyTimeoutMilliseconds: How long to wait for another connection's lock before failing.
    ///   - logger: Where open and rollback events are logged (never payloads or message ids).
    /// - Throws: ``FilterError`` with `.corruptDatabase` for a file that is not SQLite,
    ///   `.foreignDatabase` for another application's database, `.schemaTooNew` for a newer schema,
    ///   `.insecureFile` when the file or its `-wal`/`-shm` companion is readable or writable by group or
    ///   others, or `.sqlite` for I/O and permission failures.
    public init(path: String, busyTimeoutMilliseconds: Int = 5_000, logger: Logger) throws(FilterError) {
        // The file holds call metadata (caller handles, names, times): private to its owner, like a key file.
        // A new file is created 0600 before SQLite opens it; SQLite gives `-wal` and `-shm` the database's mode.
        try Self.requirePrivate(path: path, create: true)
        try Self.requirePrivate(path: path + "-wal", create: false)
        try Self.requirePrivate(path: path + "-shm", create: false)
        do {
            self.database = PThreadMutex(
                try Self.openDatabase(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            )
        } catch {
            // SQLite's messages do not name the file: a person needs to know which one.
            guard !error.message.contains(path) else { throw error }
            throw FilterError(
                code: error.code,
                message: "\(path): \(error.message)",
                sqliteResultCode: error.sqliteResultCode,
                file: error.file,
                line: error.line
            )
        }
        self.logger = logger
        self.path = path
        logger.debug("filter state opened", metadata: ["schema": "\(FilterStateSchema.currentVersion)"])
    }

    /// Opens the state file in WAL mode and brings its schema to the current version.
    private static func openDatabase(
        path: String,
        busyTimeoutMilliseconds: Int
    ) throws(FilterError)
        -> StateDatabase
    {
        let database = try StateDatabase(path: path)
        try database.execute("PRAGMA busy_timeout = \(max(0, busyTimeoutMilliseconds))")
        let mode = try database.withStatement("PRAGMA journal_mode = WAL") { statement throws(FilterError) in
            try statement.step() ? statement.text(0) : ""
        }
        guard mode.lowercased() == "wal" else {
            throw FilterError(
                code: .sqlite,
                message: "\(path) could not be switched to WAL journaling (got '\(mode)'); "
                    + "put the state file on a local file system"
            )
        }
        try database.execute("PRAGMA synchronous = FULL")
        try Self.requirePrivate(path: path + "-wal", create: false)
        try Self.requirePrivate(path: path + "-shm", create: false)
        try FilterStateSchema.prepare(database, path: path)
        return database
    }

    /// Refuses a file at `path` that group or others may read or write (the same rule as key files,
    /// ``SecretFile/checkPrivate(path:contents:)``); creates it empty with mode 0600 if it is missing and
    /// `create` is true.
    private static func requirePrivate(path: String, create: Bool) throws(FilterError) {
        if let info = try? Stat(FilePath(path)), info.type == .directory {
            throw FilterError(
                code: .sqlite,
                message: "the state file \(path) is a folder: give --state the path of a file in it (e.g. "
                    + "\(path)/e2ee-filter.sqlite)"
            )
        }
        let exists: Bool
        do {
            exists = try SecretFile.checkPrivate(path: path, contents: "the filter's call metadata")
        } catch {
            throw FilterError(code: .insecureFile, message: error.message)
        }
        guard !exists, create else { return }
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(
                FilePath(path),
                .writeOnly,
                options: [.create, .exclusiveCreate, .closeOnExec, .noFollow],
                permissions: [.ownerReadWrite]
            )
        } catch let error as Errno where error == .fileExists {
            // Created by someone else in between: check that one instead.
            try requirePrivate(path: path, create: false)
            return
        } catch {
            throw FilterError(
                code: .sqlite,
                message: "cannot create the state file \(path): \(error); check that its folder exists and is writable"
            )
        }
        // The umask can only remove bits; setting them makes sure nothing else is set either.
        let ok = Platform.setPermissions(fd, [.ownerReadWrite])
        try? fd.close()
        guard ok else {
            throw FilterError(
                code: .insecureFile,
                message: "cannot make the new state file \(path) private: run chmod 600 \(path)"
            )
        }
    }

    /// Runs `body` in one SQLite transaction, committing if it returns and rolling back if it throws.
    ///
    /// Everything done through the transaction handle commits together or not at all. Do not call
    /// the store again from inside `body` (the lock is not reentrant); use the handle.
    ///
    /// - Parameter body: The work, given a handle that is valid only during the call.
    /// - Returns: What `body` returned, once the transaction has committed durably.
    /// - Throws: Whatever `body` threw (after rolling back), or ``FilterError`` when SQLite cannot
    ///   begin or commit.
    // Not specialised: Swift 6.3.1's generic specialiser crashes (forwardToInit, "Cannot initialize a
    // nonCopyable type with a guaranteed value") on this function in release builds.
    @_semantics("optimize.sil.specialize.generic.never")
    public func transaction<T: Sendable>(_ body: (borrowing FilterStateTransaction) throws -> T) throws -> T {
        try database.withLock { database throws -> T in
            try database.execute("BEGIN IMMEDIATE")
            let result: T
            do {
                result = try body(FilterStateTransaction(database: database))
                try database.execute("COMMIT")
            } catch {
                if database.isInTransaction {
                    do {
                        try database.execute("ROLLBACK")
                    } catch let rollbackError {
                        logger.error("filter state rollback failed", metadata: ["error": "\(rollbackError)"])
                    }
                }
                logger.debug("filter state transaction rolled back", metadata: ["error": "\(type(of: error))"])
                throw error
            }
            return result
        }
    }
}
