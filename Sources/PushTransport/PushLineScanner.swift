/// A fast path for reading a ``PushLine``: one pass over the bytes, no `JSONDecoder`.
///
/// It accepts only what it can decode exactly as `JSONDecoder` would: one JSON object whose keys are among
/// ``PushLine/CodingKeys`` (byte for byte, each at most once, any order, JSON whitespace anywhere between tokens),
/// string values with the escapes `\" \\ \/ \b \f \n \r \t` only, `headers` an object of strings with distinct
/// names, and `seq` and `received_at_ms` plain integers that fit `Int64` (an optional `-`, no leading zeros, no
/// fraction or exponent). Anything else (`\u` escapes, any other key, `e2ee` included, another type, `null`,
/// duplicates, invalid UTF-8, other numbers, trailing bytes but whitespace) returns `nil`, and the caller decodes the
/// line with `JSONDecoder`, which also decides what is wrong. So the fast path can only be faster, never different.
///
/// Used by ``PushLine/read(_:)`` and by the Sender's request-line parse.
package enum PushLineScanner {
    /// The keys in `line`, or `nil` when the line is not in the simple form this scanner takes.
    package static func scan(_ line: [UInt8]) -> PushLine? {
        line.withUnsafeBufferPointer { bytes in
            var cursor = Cursor(bytes: bytes)
            return cursor.line()
        }
    }

    /// The keys in `line`'s UTF-8, or `nil` when the line is not in the simple form this scanner takes.
    package static func scan(_ line: String) -> PushLine? {
        var line = line
        return line.withUTF8 { bytes in
            var cursor = Cursor(bytes: bytes)
            return cursor.line()
        }
    }

    /// Every key the scanner takes, as its exact bytes.
    private static let keys: [(name: [UInt8], key: PushLine.CodingKeys)] = [
        PushLine.CodingKeys.seq, .apnsID, .deviceToken, .headers, .body, .bodyBase64, .receivedAtMs, .device,
    ].map { (Array($0.stringValue.utf8), $0) }

    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func line() -> PushLine? {
            var line = PushLine()
            var seen: UInt8 = 0
            guard self.take(UInt8(ascii: "{")) else { return nil }
            if !self.take(UInt8(ascii: "}")) {
                repeat {
                    guard let (key, bit) = self.key(), seen & bit == 0, self.take(UInt8(ascii: ":")) else { return nil }
                    seen |= bit
                    switch key {
                    case .seq:
                        guard let value = self.integer() else { return nil }
                        line.seq = value
                    case .receivedAtMs:
                        guard let value = self.integer() else { return nil }
                        line.receivedAtMs = value
                    case .headers:
                        guard let value = self.object() else { return nil }
                        line.headers = value
                    case .apnsID, .deviceToken, .body, .bodyBase64, .device:
                        guard let value = self.string() else { return nil }
                        switch key {
                        case .apnsID: line.apnsID = value
                        case .deviceToken: line.deviceToken = value
                        case .body: line.body = value
                        case .bodyBase64: line.bodyBase64 = value
                        default: line.device = value
                        }
                    }
                } while self.take(UInt8(ascii: ","))
                guard self.take(UInt8(ascii: "}")) else { return nil }
            }
            self.skipWhitespace()
            return self.index == self.bytes.count ? line : nil
        }

        /// A key of ``PushLine/CodingKeys``, byte for byte and without escapes, with its bit for the duplicate check.
        mutating func key() -> (PushLine.CodingKeys, UInt8)? {
            guard self.take(UInt8(ascii: "\"")) else { return nil }
            let start = self.index
            while self.index < self.bytes.count, self.bytes[self.index] != UInt8(ascii: "\"") {
                // No key of ours has an escape (or a control character): any such key is another key.
                guard self.bytes[self.index] != UInt8(ascii: "\\") else { return nil }
                self.index += 1
            }
            guard self.index < self.bytes.count else { return nil }
            let name = self.bytes[start..<self.index]
            self.index += 1
            for (bit, entry) in PushLineScanner.keys.enumerated() where entry.name.elementsEqual(name) {
                return (entry.key, UInt8(1) << bit)
            }
            return nil
        }

        /// A plain JSON integer that fits `Int64`: an optional `-`, then `0` or digits without a leading zero, and no
        /// fraction or exponent.
        mutating func integer() -> Int64? {
            self.skipWhitespace()
            let negative = self.index < self.bytes.count && self.bytes[self.index] == UInt8(ascii: "-")
            if negative { self.index += 1 }
            let start = self.index
            // Accumulated as a negative number, so that Int64.min fits.
            var value: Int64 = 0
            while self.index < self.bytes.count, let digit = Self.digit(self.bytes[self.index]) {
                let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
                let (next, overflow2) = times10.subtractingReportingOverflow(digit)
                guard !overflow, !overflow2 else { return nil }
                value = next
                self.index += 1
            }
            let count = self.index - start
            guard count > 0, count == 1 || self.bytes[start] != UInt8(ascii: "0") else { return nil }
            if self.index < self.bytes.count {
                switch self.bytes[self.index] {
                case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
                default: break
                }
            }
            if negative { return value }
            return value == Int64.min ? nil : -value
        }

        static func digit(_ byte: UInt8) -> Int64? {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int64(byte - UInt8(ascii: "0")) : nil
        }

        /// `{"name":"value",...}` with distinct names.
        mutating func object() -> [String: String]? {
            guard self.take(UInt8(ascii: "{")) else { return nil }
            var result: [String: String] = [:]
            if self.take(UInt8(ascii: "}")) { return result }
            repeat {
                guard let name = self.string(), self.take(UInt8(ascii: ":")), let value = self.string(),
                    result.updateValue(value, forKey: name) == nil
                else { return nil }
            } while self.take(UInt8(ascii: ","))
            return self.take(UInt8(ascii: "}")) ? result : nil
        }

        /// A JSON string with simple escapes, as valid UTF-8.
        mutating func string() -> String? {
            guard self.take(UInt8(ascii: "\"")) else { return nil }
            let start = self.index
            // Without escapes (the usual key, token, header), the bytes are the string.
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

        /// Skips whitespace, then consumes `byte` if it is next.
        mutating func take(_ byte: UInt8) -> Bool {
            self.skipWhitespace()
            guard self.index < self.bytes.count, self.bytes[self.index] == byte else { return false }
            self.index += 1
            return true
        }

        mutating func skipWhitespace() {
            while self.index < self.bytes.count {
                switch self.bytes[self.index] {
                case 0x20, 0x09, 0x0A, 0x0D: self.index += 1
                default: return
                }
            }
        }
    }
}
