import E2EECore

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
/// Used by ``PushLine/read(_:)`` and by the Sender's request-line parse. Its tokens are E2EECore's `JSONScanner`.
package enum PushLineScanner {
    /// The keys in `line`, or `nil` when the line is not in the simple form this scanner takes.
    package static func scan(_ line: [UInt8]) -> PushLine? {
        line.withUnsafeBufferPointer { bytes in
            var scanner = JSONScanner(bytes: bytes)
            return Self.line(&scanner)
        }
    }

    /// The keys in `line`'s UTF-8, or `nil` when the line is not in the simple form this scanner takes.
    package static func scan(_ line: String) -> PushLine? {
        var line = line
        return line.withUTF8 { bytes in
            var scanner = JSONScanner(bytes: bytes)
            return Self.line(&scanner)
        }
    }

    /// Every key the scanner takes, in the order of their exact bytes in ``names``.
    private static let keys: [PushLine.CodingKeys] = [
        .seq, .apnsID, .deviceToken, .headers, .body, .bodyBase64, .receivedAtMs, .device,
    ]
    private static let names: [[UInt8]] = keys.map { Array($0.stringValue.utf8) }

    private static func line(_ scanner: inout JSONScanner) -> PushLine? {
        var line = PushLine()
        let taken = scanner.object(names: Self.names) { scanner, index in
            switch Self.keys[index] {
            case .seq:
                guard let value = scanner.integer() else { return false }
                line.seq = value
            case .receivedAtMs:
                guard let value = scanner.integer() else { return false }
                line.receivedAtMs = value
            case .headers:
                guard let value = Self.headers(&scanner) else { return false }
                line.headers = value
            case let key:
                guard let value = scanner.string() else { return false }
                switch key {
                case .apnsID: line.apnsID = value
                case .deviceToken: line.deviceToken = value
                case .body: line.body = value
                case .bodyBase64: line.bodyBase64 = value
                default: line.device = value
                }
            }
            return true
        }
        return taken && scanner.atEnd() ? line : nil
    }

    /// `{"name":"value",...}` with distinct names.
    private static func headers(_ scanner: inout JSONScanner) -> [String: String]? {
        guard scanner.take(UInt8(ascii: "{")) else { return nil }
        var result: [String: String] = [:]
        if scanner.take(UInt8(ascii: "}")) { return result }
        repeat {
            guard let name = scanner.string(), scanner.take(UInt8(ascii: ":")), let value = scanner.string(),
                result.updateValue(value, forKey: name) == nil
            else { return nil }
        } while scanner.take(UInt8(ascii: ","))
        return scanner.take(UInt8(ascii: "}")) ? result : nil
    }
}
