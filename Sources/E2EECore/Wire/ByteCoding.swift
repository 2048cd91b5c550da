/// Appends big-endian integers and length-prefixed UTF-8 strings (docs/PROTOCOL.md, "Encoding").
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ v: UInt8) { self.bytes.append(v) }
    mutating func u16(_ v: UInt16) { self.bytes += [UInt8(v >> 8), UInt8(v & 0xff)] }
    mutating func u64(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { self.bytes.append(UInt8((v >> UInt64(shift)) & 0xff)) }
    }
    mutating func raw(_ v: [UInt8]) { self.bytes += v }

    /// str8: u8 length then UTF-8 bytes.
    mutating func str8(_ s: String, field: String, allowEmpty: Bool = true) throws(E2EEError) {
        let utf8 = Array(s.utf8)
        guard utf8.count <= 255 else { throw E2EEError.invalidArgument("\(field) is \(utf8.count) bytes; at most 255") }
        guard allowEmpty || !utf8.isEmpty else { throw E2EEError.invalidArgument("\(field) must not be empty") }
        self.u8(UInt8(utf8.count))
        self.raw(utf8)
    }

    /// str16: u16 length then UTF-8 bytes.
    mutating func str16(_ s: String, field: String) throws(E2EEError) {
        let utf8 = Array(s.utf8)
        guard utf8.count <= 0xffff else { throw E2EEError.invalidArgument("\(field) is too long") }
        self.u16(UInt16(utf8.count))
        self.raw(utf8)
    }
}

/// Reads what ``ByteWriter`` writes, strictly: every read is bounds-checked, strings must be valid UTF-8, and
/// the caller checks that nothing is left over. Failures throw `makeError(what)`.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset: Int
    private let end: Int
    let makeError: @Sendable (String) -> E2EEError

    init(_ bytes: [UInt8], range: Range<Int>? = nil, makeError: @escaping @Sendable (String) -> E2EEError) {
        self.bytes = bytes
        self.offset = range?.lowerBound ?? 0
        self.end = range?.upperBound ?? bytes.count
        self.makeError = makeError
    }

    var remaining: Int { self.end - self.offset }

    mutating func take(_ n: Int, _ what: String) throws(E2EEError) -> [UInt8] {
        guard n >= 0, self.remaining >= n else { throw self.makeError("truncated \(what)") }
        defer { self.offset += n }
        return Array(self.bytes[self.offset..<self.offset + n])
    }

    mutating func u8(_ what: String) throws(E2EEError) -> UInt8 { try self.take(1, what)[0] }
    mutating func u16(_ what: String) throws(E2EEError) -> UInt16 {
        let b = try self.take(2, what)
        return UInt16(b[0]) << 8 | UInt16(b[1])
    }
    mutating func u64(_ what: String) throws(E2EEError) -> UInt64 {
        try self.take(8, what).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func str8(_ what: String, allowEmpty: Bool = true) throws(E2EEError) -> String {
        let n = Int(try self.u8("\(what) length"))
        guard allowEmpty || n > 0 else { throw self.makeError("empty \(what)") }
        return try self.utf8(self.take(n, what), what)
    }

    mutating func str16(_ what: String) throws(E2EEError) -> String {
        let n = Int(try self.u16("\(what) length"))
        return try self.utf8(self.take(n, what), what)
    }

    private func utf8(_ b: [UInt8], _ what: String) throws(E2EEError) -> String {
        guard let s = String(validating: b, as: UTF8.self) else { throw self.makeError("\(what) is not valid UTF-8") }
        return s
    }

    func expectEnd(_ what: String) throws(E2EEError) {
        guard self.remaining == 0 else { throw self.makeError("\(self.remaining) unexpected bytes after \(what)") }
    }
}
