import CSQLite

/// A prepared statement borrowed from ``SQLiteDatabase`` for one execution.
///
/// Binding indexes are 1-based and column indexes 0-based, as in the C API.
struct SQLiteStatement {
    let raw: OpaquePointer
    unowned let database: SQLiteDatabase
    let sql: String

    /// SQLite's `SQLITE_TRANSIENT`: SQLite copies the bound bytes before the call returns.
    private static var transient: sqlite3_destructor_type { unsafeBitCast(-1, to: sqlite3_destructor_type.self) }

    mutating func bind(_ value: Int64, at index: Int32) throws(FilterStateError) {
        try database.check(sqlite3_bind_int64(raw, index, value), "bind \(index) of \(sql)")
    }

    mutating func bind(_ value: String, at index: Int32) throws(FilterStateError) {
        try database.check(sqlite3_bind_text(raw, index, value, -1, Self.transient), "bind \(index) of \(sql)")
    }

    mutating func bind(_ value: String?, at index: Int32) throws(FilterStateError) {
        if let value {
            try bind(value, at: index)
        } else {
            try database.check(sqlite3_bind_null(raw, index), "bind \(index) of \(sql)")
        }
    }

    mutating func bind(_ bytes: [UInt8], at index: Int32) throws(FilterStateError) {
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
    mutating func step() throws(FilterStateError) -> Bool {
        let rc = sqlite3_step(raw)
        try database.check(rc, sql)
        return rc == SQLITE_ROW
    }

    /// Steps a statement that returns no rows to completion.
    mutating func run() throws(FilterStateError) {
        while try step() {}
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }

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
