import Foundation
import Testing

@testable import PushTransport

/// The one-pass scanner behind `PushLine.read` reads what `JSONDecoder` reads, or declines: it may never differ.
@Suite("PushLine scanner: the same (kind, line) as JSONDecoder, or none")
struct PushLineScannerTests {
    static let (token, apnsID, headers) = (PushLineTests.token, PushLineTests.apnsID, PushLineTests.headers)
    static let body = #"{"aps":{"alert":{"title":"a/b"},"mutable-content":1},"e2ee":"AAEC/+=="}"#

    /// The lines the tools write, each with the value it must scan to.
    static let canonical: [(line: PushLine, kind: PushLine.Kind)] = [
        // A spool record as DeliveryRecord writes it (UTF-8 body, then a body that is not UTF-8).
        (
            PushLine(
                seq: 7,
                apnsID: apnsID,
                deviceToken: token,
                headers: headers,
                bodyBytes: Array(body.utf8),
                receivedAtMs: 1_767_225_600_123
            ), .spoolRecord
        ),
        (
            PushLine(
                seq: 1,
                apnsID: apnsID,
                deviceToken: token,
                headers: [:],
                bodyBytes: [0xFF, 0xFE, 0x00, 0x7B],
                receivedAtMs: 5
            ), .spoolRecord
        ),
        // The extreme integers.
        (
            PushLine(
                seq: Int64.max,
                apnsID: "",
                deviceToken: "",
                headers: [:],
                body: "",
                receivedAtMs: Int64.min
            ), .spoolRecord
        ),
        (PushLine(seq: 0, apnsID: "x", deviceToken: "ab", headers: [:], body: "", receivedAtMs: -1), .spoolRecord),
        // A request line as e2ee-send prints it, with and without the fan-out's device.
        (PushLine(deviceToken: token, headers: headers, body: body), .requestLine),
        (PushLine(deviceToken: token, headers: headers, body: body, device: "phone-1"), .requestLine),
        (PushLine(deviceToken: "", headers: [:], body: ""), .requestLine),
        // Odd text in every string, with the escapes JSONEncoder writes (control characters other than \b \f \n
        // \r \t are written as \u00XX, which the scanner declines: see `declined`).
        (
            PushLine(
                deviceToken: "00ff",
                headers: ["x-odd": "tab\there \"quoted\" back\\slash /slash", "ünï": "🎉"],
                body: "line\nbreak\r\u{08}\u{0C} ünïcödé 🎉 \u{2028}\u{7F}"
            ), .requestLine
        ),
        // A payload kept while its account is locked, and the one without a body.
        (PushLine(seq: 42, apnsID: apnsID, bodyBase64: "e30="), .bareBody),
        (PushLine(seq: 43), .bareBody),
        (PushLine(), .bareBody),
    ]

    @Test("every line the tools write takes the fast path, to exact values and the decoder's (kind, line)")
    func canonicalLinesAreScanned() throws {
        for (line, kind) in Self.canonical {
            let text = line.jsonLine()
            #expect(PushLineScanner.scan(Array(text.utf8)) == line, "\(text)")
            #expect(PushLineScanner.scan(text) == line, "\(text)")
            let read = PushLine.read(Array(text.utf8))
            #expect(read.kind == kind, "\(text)")
            #expect(read.line == (kind == .bareBody ? nil : line), "\(text)")
            let decoded = PushLine.readDecoding(Array(text.utf8))
            #expect(decoded.kind == kind, "\(text)")
            #expect(decoded.line == read.line, "\(text)")
        }
    }

    /// One input line, whether the scanner must take it, and the kind both paths must tell.
    struct Case: CustomTestStringConvertible, Sendable {
        let bytes: [UInt8]
        let scanned: Bool
        let kind: PushLine.Kind
        var testDescription: String { String(decoding: self.bytes.prefix(160), as: UTF8.self) }

        init(_ text: String, scanned: Bool, _ kind: PushLine.Kind) {
            self.init(Array(text.utf8), scanned: scanned, kind)
        }

        init(_ bytes: [UInt8], scanned: Bool, _ kind: PushLine.Kind) {
            self.bytes = bytes
            self.scanned = scanned
            self.kind = kind
        }
    }

    static let record = #""apns_id":"i","body":"x","device_token":"ab","headers":{},"received_at_ms":5"#

    /// A spool record with whitespace between every token, keys in no order.
    static let spaced =
        " \t\r\n{ \"seq\" :\t1 ,\n\"received_at_ms\"\r: 2 , \"headers\" : { \"a\" : \"b\" , \"c\":\"d\" } ,"
        + " \"device_token\" : \"ab\" , \"body_base64\" : \"e30=\" , \"apns_id\" : \"i\" } \n\t"
    /// A request line with every simple escape.
    static let escaped = #"{"body":"a\"b\\c\/d\be\ff\ng\rh\ti","device_token":"ab","headers":{"\/":"\""}}"#

    /// A spool record with `seq` written as `number`.
    static func seq(_ number: String) -> String { "{" + record + #","seq":"# + number + "}" }

    static let corpus: [Case] = [
        // Reordered keys and whitespace between every token.
        Case(#"{"headers":{"apns-id":"i"},"device_token":"ab","body":"x"}"#, scanned: true, .requestLine),
        Case(spaced, scanned: true, .spoolRecord),
        Case(#"{"device":"d","body":"x","headers":{},"device_token":"ab"}"#, scanned: true, .requestLine),
        // Both bodies present: a spool record; a request line needs `body`.
        Case("{" + record + #","body_base64":"e30=","seq":1}"#, scanned: true, .spoolRecord),
        Case(#"{"body_base64":"e30=","device_token":"ab","headers":{}}"#, scanned: true, .bareBody),
        // Missing keys.
        Case(#"{"body":"x","device_token":"ab"}"#, scanned: true, .bareBody),
        Case(#"{"body":"x","headers":{}}"#, scanned: true, .bareBody),
        Case(#"{"apns_id":"i","body":"x","device_token":"ab","headers":{},"seq":1}"#, scanned: true, .requestLine),
        Case("{}", scanned: true, .bareBody),
        Case(" { } ", scanned: true, .bareBody),
        // The simple escapes in keys' values and header names.
        Case(escaped, scanned: true, .requestLine),
        // Integers: a minus, zero, -0, the extremes.
        Case(seq("0"), scanned: true, .spoolRecord),
        Case(seq("-0"), scanned: true, .spoolRecord),
        Case(seq("-12"), scanned: true, .spoolRecord),
        Case(seq("9223372036854775807"), scanned: true, .spoolRecord),
        Case(seq("-9223372036854775808"), scanned: true, .spoolRecord),
        // Everything below is declined, and JSONDecoder decides.
        // \u escapes (also in a key, and a surrogate pair).
        Case(#"{"body":"\u0041","device_token":"ab","headers":{}}"#, scanned: false, .requestLine),
        Case(#"{"body":"\ud83c\udf89","device_token":"ab","headers":{}}"#, scanned: false, .requestLine),
        Case(#"{"body":"x","device_token":"ab","headers":{"\u0061":"b"}}"#, scanned: false, .requestLine),
        Case(#"{"\u0062ody":"x","device_token":"ab","headers":{}}"#, scanned: false, .requestLine),
        Case(#"{"body":"\ud800","device_token":"ab","headers":{}}"#, scanned: false, .bareBody),
        Case(#"{"body":"x\q","device_token":"ab","headers":{}}"#, scanned: false, .bareBody),
        // Other keys, and the envelope's.
        Case(#"{"body":"x","device_token":"ab","headers":{},"extra":1}"#, scanned: false, .requestLine),
        Case(#"{"body":"x","device_token":"ab","headers":{},"Body":"y"}"#, scanned: false, .requestLine),
        Case(#"{"body":"x","device_token":"ab","headers":{},"e2ee":"AAEC"}"#, scanned: false, .bareBody),
        Case(#"{"e2ee":"AAEC","aps":{"mutable-content":1}}"#, scanned: false, .bareBody),
        Case(#"{"aps":{"alert":{"title":"t"}}}"#, scanned: false, .bareBody),
        // Duplicates: keys, header names.
        Case(#"{"body":"x","body":"y","device_token":"ab","headers":{}}"#, scanned: false, .requestLine),
        Case(#"{"body":"x","device_token":"ab","headers":{"a":"1","a":"2"}}"#, scanned: false, .requestLine),
        Case("{" + record + #","seq":1,"seq":2}"#, scanned: false, .spoolRecord),
        // Wrong types and null.
        Case(#"{"body":1,"device_token":"ab","headers":{}}"#, scanned: false, .bareBody),
        Case(#"{"body":"x","device_token":"ab","headers":{},"body_base64":7}"#, scanned: false, .bareBody),
        Case(#"{"body":"x","device_token":"ab","headers":{"a":1}}"#, scanned: false, .bareBody),
        Case(#"{"body":"x","device_token":"ab","headers":[]}"#, scanned: false, .bareBody),
        Case(#"{"body":"x","device_token":null,"headers":{}}"#, scanned: false, .bareBody),
        Case(#"{"body":null,"device_token":"ab","headers":{}}"#, scanned: false, .bareBody),
        Case(#"{"body":"x","device_token":"ab","headers":{},"device":2}"#, scanned: false, .requestLine),
        Case(seq(#""1""#), scanned: false, .requestLine),
        Case(seq("true"), scanned: false, .requestLine),
        Case(seq("null"), scanned: false, .requestLine),
        // Numbers the scanner leaves to JSONDecoder.
        Case(seq("1.0"), scanned: false, .spoolRecord),
        Case(seq("1.5"), scanned: false, .requestLine),
        Case(seq("1e3"), scanned: false, .spoolRecord),
        Case(seq("1E3"), scanned: false, .spoolRecord),
        Case(seq("01"), scanned: false, .requestLine),  // JSONDecoder parses it, but not as an Int64
        Case(seq("-"), scanned: false, .requestLine),
        Case(seq("+1"), scanned: false, .bareBody),
        Case(seq("9223372036854775808"), scanned: false, .requestLine),
        Case(seq("-9223372036854775809"), scanned: false, .requestLine),
        Case(seq("99999999999999999999"), scanned: false, .requestLine),
        Case(seq("NaN"), scanned: false, .bareBody),
        Case(seq("Infinity"), scanned: false, .bareBody),
        // Not JSON: raw control characters, unterminated strings, trailing bytes, a trailing comma.
        Case("{\"body\":\"raw\ncontrol\",\"device_token\":\"ab\",\"headers\":{}}", scanned: false, .bareBody),
        Case(#"{"body":"unterminated,"device_token":"ab","headers":{}}"#, scanned: false, .bareBody),
        Case(#"{"body":"x","device_token":"ab","headers":{}} trailing"#, scanned: false, .bareBody),
        Case(#"{"body":"x","device_token":"ab","headers":{}}}"#, scanned: false, .bareBody),
        Case(#"{"body":"x","device_token":"ab","headers":{}}{}"#, scanned: false, .bareBody),
        Case(#"{"body":"x","device_token":"ab","headers":{},}"#, scanned: false, .requestLine),  // JSONDecoder takes it
        Case(#"{"body":"x""device_token":"ab","headers":{}}"#, scanned: false, .bareBody),
        Case(#"{"body":"x","device_token":"ab","headers":{}"#, scanned: false, .bareBody),
        Case(#"{"body" "x"}"#, scanned: false, .bareBody),
        Case("{", scanned: false, .bareBody),
        // Not objects, empty, NaN.
        Case("", scanned: false, .bareBody),
        Case("   ", scanned: false, .bareBody),
        Case("[]", scanned: false, .bareBody),
        Case(#"[{"body":"x","device_token":"ab","headers":{}}]"#, scanned: false, .bareBody),
        Case(#""{}""#, scanned: false, .bareBody),
        Case("null", scanned: false, .bareBody),
        Case("NaN", scanned: false, .bareBody),
        Case("7", scanned: false, .bareBody),
        // Invalid UTF-8 inside a string and outside, and a lone byte order mark.
        Case(
            Array(#"{"body":""#.utf8) + [0xFF] + Array(#"","device_token":"ab","headers":{}}"#.utf8),
            scanned: false,
            .bareBody
        ),
        Case(
            Array(#"{"body":""#.utf8) + [0xC3] + Array(#"","device_token":"ab","headers":{}}"#.utf8),
            scanned: false,
            .bareBody
        ),
        Case(
            Array(#"{"body":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#"","device_token":"ab","headers":{}}"#.utf8),
            scanned: false,
            .bareBody
        ),
        Case(Array(#"{"body":"x","device_token":"ab","headers":{}}"#.utf8) + [0xFF], scanned: false, .bareBody),
        Case(
            [0xEF, 0xBB, 0xBF] + Array(#"{"body":"x","device_token":"ab","headers":{}}"#.utf8),
            scanned: false,
            .bareBody
        ),
        // Too long: a bare body before any parsing, whichever path.
        Case(
            #"{"body":""# + String(repeating: "a", count: PushLine.maximumLineLength)
                + #"","device_token":"ab","headers":{}}"#,
            scanned: true,
            .bareBody
        ),
    ]

    @Test("the fast path gives exactly the decoder's (kind, line), and is taken where it should be", arguments: corpus)
    func sameAsDecoder(_ c: Case) throws {
        let read = PushLine.read(c.bytes)
        let decoded = PushLine.readDecoding(c.bytes)
        #expect(read.kind == decoded.kind)
        #expect(read.line == decoded.line)
        #expect(read.kind == c.kind)
        #expect((PushLineScanner.scan(c.bytes) != nil) == c.scanned)
        if let scanned = PushLineScanner.scan(c.bytes), read.kind != .bareBody {
            #expect(read.line == scanned)
        }
    }

    @Test("what the scanner reads, to exact values")
    func exactValues() throws {
        #expect(
            PushLineScanner.scan(Self.spaced)
                == PushLine(
                    seq: 1,
                    apnsID: "i",
                    deviceToken: "ab",
                    headers: ["a": "b", "c": "d"],
                    bodyBase64: "e30=",
                    receivedAtMs: 2
                )
        )
        #expect(PushLineScanner.scan(Self.escaped)?.body == "a\"b\\c/d\u{08}e\u{0C}f\ng\rh\ti")
        #expect(PushLineScanner.scan(Self.escaped)?.headers == ["/": "\""])
        #expect(PushLineScanner.scan(Self.seq("-0"))?.seq == 0)
        #expect(PushLineScanner.scan(Self.seq("-12"))?.seq == -12)
        #expect(PushLineScanner.scan(Self.seq("9223372036854775807"))?.seq == Int64.max)
        #expect(PushLineScanner.scan(Self.seq("-9223372036854775808"))?.seq == Int64.min)
        #expect(PushLineScanner.scan("{}") == PushLine())
        // What JSONDecoder makes of the numbers the scanner declines.
        #expect(PushLine.read(Array(Self.seq("1.0").utf8)).line?.seq == 1)
        #expect(PushLine.read(Array(Self.seq("1e3").utf8)).line?.seq == 1000)
    }

    @Test("reordered keys and whitespace: every order of a spool record's keys is scanned to the same line")
    func everyOrder() throws {
        let members = [
            #""apns_id":"i""#, #""body":"x""#, #""device_token":"ab""#, #""headers":{"k":"v"}"#,
            #""received_at_ms":5"#, #""seq":-3"#,
        ]
        let expected = PushLine(
            seq: -3,
            apnsID: "i",
            deviceToken: "ab",
            headers: ["k": "v"],
            body: "x",
            receivedAtMs: 5
        )
        var count = 0
        for order in Self.permutations(Array(members.indices)) {
            let spaced = count % 2 == 0 ? "," : " ,\n\t"
            let text = "{" + order.map { members[$0] }.joined(separator: spaced) + "}"
            #expect(PushLineScanner.scan(text) == expected, "\(text)")
            let read = PushLine.read(Array(text.utf8))
            #expect(read.kind == .spoolRecord && read.line == expected, "\(text)")
            count += 1
        }
        #expect(count == 720)
    }

    @Test("every one-byte change of a spool record and a request line reads the same through both paths")
    func mutations() async throws {
        let record = PushLine(
            seq: 12,
            apnsID: "i-1",
            deviceToken: "ab01",
            headers: ["apns-id": "i-1", "k": "v"],
            body: "{\"e\":\"a/b\\n\"}",
            receivedAtMs: -340
        )
        let replacements: [UInt8?] = [nil] + Array(#" "\/-.0159eEu{}[],:nt"#.utf8) + [0x00, 0x0A, 0x7F, 0xC3, 0xFF]
        var scanned = 0
        var tried = 0
        let bases = [record.jsonLine(), PushLine(deviceToken: "ab", headers: ["a": "b"], body: "x\n").jsonLine()]
        for base in bases {
            let bytes = Array(base.utf8)
            for index in bytes.indices {
                for replacement in replacements {
                    var mutated = bytes
                    if let replacement { mutated[index] = replacement } else { mutated.remove(at: index) }
                    let read = PushLine.read(mutated)
                    let decoded = PushLine.readDecoding(mutated)
                    let text = String(decoding: mutated, as: UTF8.self)
                    #expect(read.kind == decoded.kind, "\(text)")
                    #expect(read.line == decoded.line, "\(text)")
                    if PushLineScanner.scan(mutated) != nil { scanned += 1 }
                    tried += 1
                }
                // Seconds of CPU in a debug build: let the suite's async tests have the cooperative pool's threads.
                await Task.yield()
            }
        }
        // Both paths are exercised: some mutated lines are still scanned, most are left to the decoder.
        #expect(tried == bases.map(\.utf8.count).reduce(0, +) * replacements.count)
        #expect(scanned > 100 && scanned < tried / 2, "\(scanned) of \(tried)")
    }

    static func permutations(_ items: [Int]) -> [[Int]] {
        guard let first = items.first else { return [[]] }
        return Self.permutations(Array(items.dropFirst())).flatMap { rest in
            (0...rest.count).map { position in
                var order = rest
                order.insert(first, at: position)
                return order
            }
        }
    }
}
