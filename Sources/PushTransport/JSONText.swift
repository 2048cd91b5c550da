/// The pieces of JSON writing ``PushLine/jsonLine()`` needs, matching `JSONEncoder`'s output with `[.sortedKeys,
/// .withoutEscapingSlashes]` byte for byte (the line is tested against it).
package enum JSONText {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `text` as a JSON string literal: `"` and `\\` escaped, control characters as `\\b \\f \\n \\r \\t` or
    /// `\\u00XX`, everything else (`/` and non-ASCII included) as its UTF-8 bytes.
    package static func appendString(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            out.append(UInt8(ascii: "\""))
            // Runs of bytes that need no escape (nearly all of them) are copied at once.
            var runStart = 0
            for index in bytes.indices {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
                case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
                case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                default:
                    out.append(contentsOf: [
                        UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    ])
                    out.append(Self.hexDigits[Int(byte >> 4)])
                    out.append(Self.hexDigits[Int(byte & 0x0F)])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
            out.append(UInt8(ascii: "\""))
        }
    }

    /// Object keys in the order `JSONEncoder`'s `.sortedKeys` writes them: by their UTF-8 bytes.
    package static func sortedKeys(_ keys: some Sequence<String>) -> [String] {
        keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}

/// The members of one JSON object written in one pass: a comma before every member but the first. The caller gives
/// the keys in sorted order (``JSONText/sortedKeys(_:)``) and writes the braces; a nested object gets its own.
package struct JSONMembers {
    private var first = true

    package init() {}

    package mutating func key(_ name: StaticString, _ out: inout [UInt8]) {
        if !self.first { out.append(UInt8(ascii: ",")) }
        self.first = false
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        out.append(contentsOf: #"":"#.utf8)
    }

    package mutating func string(_ name: StaticString, _ value: String, _ out: inout [UInt8]) {
        self.key(name, &out)
        JSONText.appendString(value, to: &out)
    }

    /// A number or `true`/`false`, written as given.
    package mutating func literal(_ name: StaticString, _ value: String, _ out: inout [UInt8]) {
        self.key(name, &out)
        out.append(contentsOf: value.utf8)
    }
}
