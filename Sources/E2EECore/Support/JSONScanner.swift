/// The tokens of the fast paths that read JSON without `JSONDecoder` (``PushLineScanner`` for push lines, the device
/// list's in `DeviceList+Scan.swift`), over one buffer of bytes.
///
/// Each method takes one token in the plain form that `JSONDecoder` would decode to the same value, or returns `nil`
/// (`false`) for anything else. A fast path that meets `nil` gives up, and its caller decodes with `JSONDecoder`,
/// which also decides what is wrong: so a fast path can only be faster than the full decoder, never different.
/// It holds the buffer's pointer: use it only inside the `withUnsafeBufferPointer` that gave it.
package struct JSONScanner {
    package let bytes: UnsafeBufferPointer<UInt8>
    package var index = 0

    package init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// True when only JSON whitespace is left.
    package mutating func atEnd() -> Bool {
        self.skipWhitespace()
        return self.index == self.bytes.count
    }

    /// Skips whitespace, then consumes `byte` if it is next.
    package mutating func take(_ byte: UInt8) -> Bool {
        self.skipWhitespace()
        guard self.index < self.bytes.count, self.bytes[self.index] == byte else { return false }
        self.index += 1
        return true
    }

    package mutating func skipWhitespace() {
        while self.index < self.bytes.count {
            switch self.bytes[self.index] {
            case 0x20, 0x09, 0x0A, 0x0D: self.index += 1
            default: return
            }
        }
    }

    /// An object key without escapes, as the index of the entry of `names` it equals byte for byte, then the `:`
    /// after it. `nil` for any other key (an escaped key is another key: none of the callers' names has an escape).
    package mutating func key(among names: [[UInt8]]) -> Int? {
        guard self.take(UInt8(ascii: "\"")) else { return nil }
        let start = self.index
        while self.index < self.bytes.count, self.bytes[self.index] != UInt8(ascii: "\"") {
            guard self.bytes[self.index] != UInt8(ascii: "\\") else { return nil }
            self.index += 1
        }
        guard self.index < self.bytes.count else { return nil }
        let name = UnsafeBufferPointer(rebasing: self.bytes[start..<self.index])
        self.index += 1
        guard let found = names.firstIndex(where: { $0.elementsEqual(name) }), self.take(UInt8(ascii: ":")) else {
            return nil
        }
        return found
    }

    /// A plain JSON integer that fits `Int64`: an optional `-`, then `0` or digits without a leading zero, and no
    /// fraction or exponent.
    package mutating func integer() -> Int64? {
        self.skipWhitespace()
        let negative = self.index < self.bytes.count && self.bytes[self.index] == UInt8(ascii: "-")
        if negative { self.index += 1 }
        let start = self.index
        // Accumulated as a negative number, so that Int64.min fits.
        var value: Int64 = 0
        while self.index < self.bytes.count, let digit = Self.digit(self.bytes[self.index]) {
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = times10.subtractingReportingOverflow(Int64(digit))
            guard !overflow, !overflow2 else { return nil }
            value = next
            self.index += 1
        }
        guard self.plainDigits(from: start) else { return nil }
        if negative { return value }
        return value == Int64.min ? nil : -value
    }

    /// A plain JSON integer that fits `UInt64`: `0` or digits without a leading zero, no sign, fraction or exponent.
    package mutating func unsignedInteger() -> UInt64? {
        self.skipWhitespace()
        let start = self.index
        var value: UInt64 = 0
        while self.index < self.bytes.count, let digit = Self.digit(self.bytes[self.index]) {
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            guard !overflow, !overflow2 else { return nil }
            value = next
            self.index += 1
        }
        return self.plainDigits(from: start) ? value : nil
    }

    /// The digits from `start` to here are a whole plain integer: at least one, no leading zero, and no fraction or
    /// exponent after them.
    private func plainDigits(from start: Int) -> Bool {
        let count = self.index - start
        guard count > 0, count == 1 || self.bytes[start] != UInt8(ascii: "0") else { return false }
        if self.index < self.bytes.count {
            switch self.bytes[self.index] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return false
            default: break
            }
        }
        return true
    }

    private static func digit(_ byte: UInt8) -> UInt8? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? byte - UInt8(ascii: "0") : nil
    }

    /// A JSON string with the escapes `\" \\ \/ \b \f \n \r \t` only, as valid UTF-8.
    package mutating func string() -> String? {
        guard self.take(UInt8(ascii: "\"")) else { return nil }
        let start = self.index
        // Without escapes (keys, hex, tokens, ids), the bytes are the string.
        while self.index < self.bytes.count {
            let byte = self.bytes[self.index]
            if byte == UInt8(ascii: "\"") {
                let text = String(validating: self.bytes[start..<self.index], as: UTF8.self)
                self.index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            self.index += 1
        }
        // With escapes (a request line's body is JSON in a JSON string): copy each run between escapes whole.
        var decoded: [UInt8] = []
        decoded.reserveCapacity(self.bytes.count - start)
        var run = start
        while self.index < self.bytes.count {
            let byte = self.bytes[self.index]
            guard byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 else {
                self.index += 1
                continue
            }
            decoded.append(contentsOf: UnsafeBufferPointer(rebasing: self.bytes[run..<self.index]))
            self.index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: decoded, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard self.index < self.bytes.count else { return nil }
                let escaped = self.bytes[self.index]
                self.index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escaped)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                default: return nil  // \u and anything invalid: the full decoder's job
                }
                run = self.index
            default:
                return nil  // a raw control character is not valid JSON
            }
        }
        return nil
    }

    /// A string of hex digits, as its bytes.
    package mutating func hex() -> [UInt8]? {
        self.string().flatMap(Hex.decode)
    }

    /// `[` element (`,` element)* `]` or `[]`, each element read by `element`; `nil` when one is `nil`.
    package mutating func array<Element>(_ element: (inout JSONScanner) -> Element?) -> [Element]? {
        guard self.take(UInt8(ascii: "[")) else { return nil }
        var result: [Element] = []
        if self.take(UInt8(ascii: "]")) { return result }
        repeat {
            guard let value = element(&self) else { return nil }
            result.append(value)
        } while self.take(UInt8(ascii: ","))
        return self.take(UInt8(ascii: "]")) ? result : nil
    }

    /// `{` key `:` value (`,` …)* `}` or `{}` whose keys are among `names`, each at most once (at most 64 names):
    /// `value` reads the value of the name at the index it is given. `false` for another key, a repeated one, or a
    /// value `value` refuses.
    package mutating func object(names: [[UInt8]], _ value: (inout JSONScanner, Int) -> Bool) -> Bool {
        guard self.take(UInt8(ascii: "{")) else { return false }
        if self.take(UInt8(ascii: "}")) { return true }
        var seen: UInt64 = 0
        repeat {
            guard let found = self.key(among: names), seen & (1 << found) == 0 else { return false }
            seen |= 1 << found
            guard value(&self, found) else { return false }
        } while self.take(UInt8(ascii: ","))
        return self.take(UInt8(ascii: "}"))
    }
}
