import Foundation
import Testing

@testable import PushTransport

/// `CanonicalBase64` must accept exactly the texts that Foundation decodes and that encode back to themselves (the
/// rule it replaced on the device's path), and give the same bytes.
@Suite("Canonical base64")
struct CanonicalBase64Tests {
    /// What the device did before: decode with Foundation, encode again, compare.
    static func reference(_ text: String) -> [UInt8]? {
        guard let data = Data(base64Encoded: text), data.base64EncodedString() == text else { return nil }
        return Array(data)
    }

    /// A deterministic generator, so a failure names a case that can be run again.
    struct SplitMix64 {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    @Test("fixed cases: padding, non-canonical last characters, foreign characters, empty")
    func fixedCases() {
        let cases: [(String, [UInt8]?)] = [
            ("", []),
            ("AA==", [0]),
            ("AB==", nil),  // unused bits set
            ("AAA=", [0, 0]),
            ("AAB=", nil),  // unused bits set
            ("AAAA", [0, 0, 0]),
            ("//4Aew==", [0xFF, 0xFE, 0x00, 0x7B]),
            ("e30=", Array("{}".utf8)),
            ("e30", nil),  // no padding
            ("e3 0=", nil),
            ("e30=\n", nil),
            ("A===", nil),
            ("====", nil),
            ("AA=A", nil),
            ("AA==AAAA", nil),  // padding before the end
            ("-_-_", nil),  // URL alphabet
            ("AAA\u{e9}", nil),
        ]
        for (text, expected) in cases {
            #expect(CanonicalBase64.decode(text) == expected, "\(text.debugDescription)")
            #expect(Self.reference(text) == expected, "the reference disagrees on \(text.debugDescription)")
        }
    }

    @Test("20,000 generated texts: valid encodings and their mutations decide as Foundation decode-and-re-encode")
    func agreesWithFoundation() {
        var random = SplitMix64(state: 0x5EED)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=".utf8)
        let strangers = Array(" \n\r\t-_.\\\"{}".utf8) + [0x00, 0x7F, 0xC3, 0xA9]
        var accepted = 0
        var refused = 0
        for round in 0..<20_000 {
            let bytes = (0..<random.below(40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            var text = Array(Data(bytes).base64EncodedString().utf8)
            switch round % 5 {
            case 0:
                break  // a valid encoding
            case 1 where !text.isEmpty:
                text[random.below(text.count)] = alphabet[random.below(alphabet.count)]
            case 2 where !text.isEmpty:
                text[random.below(text.count)] = strangers[random.below(strangers.count)]
            case 3 where !text.isEmpty:
                text.removeLast(1 + random.below(min(3, text.count)))
            default:
                text.insert(alphabet[random.below(alphabet.count)], at: random.below(text.count + 1))
            }
            let string = String(decoding: text, as: UTF8.self)
            let expected = String(validating: text, as: UTF8.self) == nil ? nil : Self.reference(string)
            let decoded = text.withUnsafeBufferPointer { CanonicalBase64.decode($0) }
            #expect(decoded == expected, "round \(round): \(string.debugDescription)")
            if decoded == nil { refused += 1 } else { accepted += 1 }
        }
        // Both outcomes are exercised in quantity, or this test proves little.
        #expect(accepted > 5_000)
        #expect(refused > 5_000)
    }
}
