/// A fast path for the request lines `e2ee-send` itself prints (`{"body":"...","device_token":"...","headers":{...}}`):
/// one pass over the bytes, no `JSONDecoder`.
///
/// It accepts only what it can decode exactly as `JSONDecoder` would: an object with the three keys once each (any
/// order, JSON whitespace anywhere between tokens), string values, a `headers` object of strings with distinct names,
/// and the escapes `\" \\ \/ \b \f \n \r \t`. Anything else (`\u` escapes, other keys, numbers, duplicates, invalid
/// UTF-8, trailing bytes) returns `nil`, and the caller decodes the line with `JSONDecoder`, which also produces the
/// error message. So the fast path can only be faster, never different.
enum RequestLineScanner {
    /// The request in `line`, or `nil` when the line is not in the simple form this scanner takes.
    static func parse(_ line: String) -> APNsRequest? {
        var line = line
        return line.withUTF8 { bytes in
            var scanner = Cursor(bytes: bytes)
            return scanner.request()
        }
    }

    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func request() -> APNsRequest? {
            var body: String?
            var deviceToken: String?
            var headers: [String: String]?
            guard self.take(UInt8(ascii: "{")) else { return nil }
            repeat {
                guard let key = self.string(), self.take(UInt8(ascii: ":")) else { return nil }
                switch key {
                case "body":
                    guard body == nil, let value = self.string() else { return nil }
                    body = value
                case "device_token":
                    guard deviceToken == nil, let value = self.string() else { return nil }
                    deviceToken = value
                case "headers":
                    guard headers == nil, let value = self.object() else { return nil }
                    headers = value
                default:
                    return nil
                }
            } while self.take(UInt8(ascii: ","))
            guard self.take(UInt8(ascii: "}")), let body, let deviceToken, let headers else { return nil }
            self.skipWhitespace()
            guard self.index == self.bytes.count else { return nil }
            return APNsRequest(deviceToken: deviceToken, headers: headers, body: body)
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
            var decoded = Array(self.bytes[start..<self.index])
            while self.index < self.bytes.count {
                let byte = self.bytes[self.index]
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
                case 0..<0x20:
                    return nil  // a raw control character is not valid JSON
                default:
                    decoded.append(byte)
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
