/// Lowercase hex encoding and strict decoding (public data only: never used on secrets).
///
/// Inlinable, so that callers in other modules get them specialised for their own collection types (the generic
/// entry points cost the relay about 3 µs per call).
public enum Hex: Sendable {
    /// Encodes bytes as lowercase hex.
    @inlinable
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(Self.digit(byte >> 4))
            out.append(Self.digit(byte & 0x0f))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hex (either case); nil for an odd length or a non-hex character.
    @inlinable
    public static func decode(_ string: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(string.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let high = value(utf8[i]), let low = value(utf8[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    /// The lowercase hex digit of a value 0-15.
    @inlinable
    static func digit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") - 10 + value
    }

    @inlinable
    static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
