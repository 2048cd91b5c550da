#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension UUID {
    /// The same text as `uuidString` (uppercase hex, 8-4-4-4-12), formatted without `snprintf`.
    ///
    /// FoundationEssentials formats `uuidString` with one `snprintf` of sixteen `%02X`, about 6,300 instructions;
    /// the filter formats a call id two or three times per call payload (its state rows and its decision line).
    var uuidText: String {
        withUnsafeBytes(of: self.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var index = 0
                for (offset, byte) in bytes.enumerated() {
                    if offset == 4 || offset == 6 || offset == 8 || offset == 10 {
                        out[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    out[index] = Self.hexDigit(byte >> 4)
                    out[index + 1] = Self.hexDigit(byte & 0x0F)
                    index += 2
                }
                return index
            }
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }
}
