/// Fresh random identifiers from the system's generator, 8 bytes per `getrandom`.
///
/// The one source of the random ids the project's requests carry: the relay's push ids, idempotency keys and request
/// ids, the sender's `apns-id`s and the gateway's. Foundation's `UUID()` opens, reads and closes `/dev/urandom` on
/// each call on Linux, three system calls for every push.
package enum RandomID {
    private static let digits = Array("0123456789abcdef".utf8)

    /// A random (version 4) UUID as lowercase text, the form `UUID().uuidString.lowercased()` writes (RFC 9562
    /// §5.4: version 4 in the high bits of byte 6, variant 0b10 in the high bits of byte 8).
    package static func uuidText() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: generator.next()) { bytes.replaceSubrange(0..<8, with: $0) }
        withUnsafeBytes(of: generator.next()) { bytes.replaceSubrange(8..<16, with: $0) }
        bytes[6] = (bytes[6] & 0x0f) | 0x40
        bytes[8] = (bytes[8] & 0x3f) | 0x80
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Eight random bytes as 16 lowercase hex digits.
    package static func hex8() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next()
        var text: [UInt8] = []
        text.reserveCapacity(16)
        for shift in stride(from: 60, through: 0, by: -4) {
            text.append(digits[Int((value >> UInt64(shift)) & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
