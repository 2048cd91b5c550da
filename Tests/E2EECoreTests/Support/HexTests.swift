import E2EECore
import Foundation
import Testing

@Suite("Hex: lowercase encoding, strict decoding")
struct HexTests {
    @Test("every byte encodes as printf's %02x, and decodes back from either case")
    func everyByte() {
        let bytes = (0...255).map { UInt8($0) }
        let expected = bytes.map { String(format: "%02x", $0) }.joined()
        #expect(Hex.encode(bytes) == expected)
        #expect(Hex.encode(bytes[1..<3]) == "0102")
        #expect(Hex.decode(expected) == bytes)
        #expect(Hex.decode(expected.uppercased()) == bytes)
        #expect(Hex.decode(Substring("0aFf")) == [0x0a, 0xff])
    }

    @Test("an odd length or any character outside 0-9, a-f, A-F is refused")
    func refusals() {
        #expect(Hex.decode("abc") == nil)
        for text in ["0g", "g0", "0 ", " 0", "-1", "é0", "0\u{0}", "/0", ":0", "@0", "`0", "G0"] {
            #expect(Hex.decode(text) == nil, "\(text)")
        }
        #expect(Hex.decode("") == [])
    }
}
