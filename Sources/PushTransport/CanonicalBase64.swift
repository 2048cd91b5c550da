/// Strict base64 of docs/PROTOCOL.md §4 in one pass: the standard alphabet, `=` padding to a multiple of four
/// characters, nothing else (no whitespace, no line breaks), and canonical (the unused low bits of the last
/// character are zero). A text is accepted exactly when it is the standard padded encoding of the bytes it
/// decodes to.
///
/// The device decodes every push body's envelope with this, and the relay every submitted envelope: it replaces
/// decoding with Foundation and encoding the result again to compare, which cost three passes and two allocations.
package enum CanonicalBase64 {
    /// 0-63 for the alphabet, 0xFF for everything else (`=` included: padding is read apart).
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        for (value, character) in alphabet.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }()

    /// The bytes `text` encodes, or nil unless it is canonical padded base64.
    package static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let count = text.count
        guard count % 4 == 0 else { return nil }
        guard count > 0 else { return [] }
        let padding = text[count - 1] == UInt8(ascii: "=") ? (text[count - 2] == UInt8(ascii: "=") ? 2 : 1) : 0
        let values = Self.values
        return values.withUnsafeBufferPointer { table -> [UInt8]? in
            var failed = false
            let decoded = [UInt8](unsafeUninitializedCapacity: count / 4 * 3 - padding) { output, initialized in
                var out = 0
                var index = 0
                // Every quad but the last: four alphabet characters, three bytes.
                while index < count - 4 {
                    let a = table[Int(text[index])]
                    let b = table[Int(text[index + 1])]
                    let c = table[Int(text[index + 2])]
                    let d = table[Int(text[index + 3])]
                    guard (a | b | c | d) & 0xC0 == 0 else {
                        failed = true
                        initialized = out
                        return
                    }
                    output[out] = a << 2 | b >> 4
                    output[out + 1] = (b & 0x0F) << 4 | c >> 2
                    output[out + 2] = (c & 0x03) << 6 | d
                    out += 3
                    index += 4
                }
                // The last quad: its padding, and the unused bits of its last character must be zero.
                let a = table[Int(text[index])]
                let b = table[Int(text[index + 1])]
                let c = padding == 2 ? 0 : table[Int(text[index + 2])]
                let d = padding >= 1 ? 0 : table[Int(text[index + 3])]
                let unused: UInt8 =
                    switch padding {
                    case 2: b & 0x0F
                    case 1: c & 0x03
                    default: 0
                    }
                guard (a | b | c | d) & 0xC0 == 0, unused == 0 else {
                    failed = true
                    initialized = out
                    return
                }
                output[out] = a << 2 | b >> 4
                if padding < 2 { output[out + 1] = (b & 0x0F) << 4 | c >> 2 }
                if padding < 1 { output[out + 2] = (c & 0x03) << 6 | d }
                initialized = out + 3 - padding
            }
            return failed ? nil : decoded
        }
    }

    /// The bytes `text` encodes, or nil unless it is canonical padded base64.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { decode($0) }
    }
}
