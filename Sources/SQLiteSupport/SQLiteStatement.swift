public import CSQLite

/// A prepared statement borrowed from ``SQLiteDatabase`` for one execution.
///
/// Binding indexes are 1-based and column indexes 0-based, as in the C API.
public struct SQLiteStatement<Errors: SQLiteErrorMapping> {
    public typealias Failure = Errors.Failure

    @usableFromInline let raw: OpaquePointer
    @usableFromInline unowned let database: SQLiteDatabase<Errors>
    @usableFromInline let sql: String

    @inlinable
    init(raw: OpaquePointer, database: SQLiteDatabase<Errors>, sql: String) {
        self.raw = raw
        self.database = database
        self.sql = sql
    }

    /// SQLite's `SQLITE_TRANSIENT`: SQLite copies the bound bytes before the call returns.
    @inlinable
    static var transient: sqlite3_destructor_type { unsafeBitCast(-1, to: sqlite3_destructor_type.self) }

    @inlinable
    public mutating func bind(_ value: Int64, at index: Int32) throws(Failure) {
        try database.check(sqlite3_bind_int64(raw, index, value), "bind \(index) of \(sql)")
    }

    @inlinable
    public mutating func bind(_ value: Int64?, at index: Int32) throws(Failure) {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    @inlinable
    public mutating func bind(_ value: String, at index: Int32) throws(Failure) {
        try database.check(sqlite3_bind_text(raw, index, value, -1, Self.transient), "bind \(index) of \(sql)")
    }

    @inlinable
    public mutating func bind(_ value: String?, at index: Int32) throws(Failure) {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    @inlinable
    public mutating func bindNull(at index: Int32) throws(Failure) {
        try database.check(sqlite3_bind_null(raw, index), "bind \(index) of \(sql)")
    }

    @inlinable
    public mutating func bind(_ bytes: [UInt8], at index: Int32) throws(Failure) {
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
        try database.check(rc, "bind \(index) of \(sql)")
    }

    /// Steps once; returns true when a row is available, false when the statement is done.
    @inlinable
    public mutating func step() throws(Failure) -> Bool {
        let rc = sqlite3_step(raw)
        try database.check(rc, sql)
        return rc == SQLITE_ROW
    }

    /// Steps a statement that returns no rows to completion.
    @inlinable
    public mutating func run() throws(Failure) {
        while try step() {}
    }

    /// The virtual-machine steps this statement ran since the last call (SQLite's own count of its work; tests).
    @inlinable
    public func takeVMSteps() -> Int { Int(sqlite3_stmt_status(raw, Int32(SQLITE_STMTSTATUS_VM_STEP), 1)) }

    @inlinable
    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }

    @inlinable
    public func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    @inlinable
    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }

    @inlinable
    public func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(raw, column) else { return "" }
        let count = Int(sqlite3_column_bytes(raw, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    @inlinable
    public func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }

    @inlinable
    public func blob(_ column: Int32) -> [UInt8] {
        guard let pointer = sqlite3_column_blob(raw, column) else { return [] }
        let count = Int(sqlite3_column_bytes(raw, column))
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}

/// A statement is borrowed for one execution on its connection's thread.
@available(*, unavailable)
extension SQLiteStatement: Sendable {}
