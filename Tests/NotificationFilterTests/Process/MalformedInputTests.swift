import Foundation
import Testing

/// `e2ee-filter run` on standard input mixing valid lines with many kinds of garbage.
///
/// Decided here: an EMPTY line is an input like any other. It gets one decision, and every line's seq is its 1-based
/// line number, so decisions map back to lines one to one (a reader never has to guess which lines were skipped).
/// A line that is neither a request line nor a spool record (README.md, "What `e2ee-filter run` reads") is a bare
/// APNs body and gets docs/PROTOCOL.md §4's code: an empty line or a line of spaces is `malformed-envelope`.
@Suite("e2ee-filter run: malformed input lines")
struct MalformedInputTests {
    struct Case {
        var id: String
        var bytes: [UInt8]
        var decision: String
        var reason: String
    }

    private struct RequestLine: Encodable {
        var deviceToken = String(repeating: "cd", count: 32)
        var headers: [String: String]
        var body: String
        enum CodingKeys: String, CodingKey {
            case deviceToken = "device_token"
            case headers, body
        }
    }

    private static func requestLine(_ body: [UInt8]) -> [UInt8] {
        let line = RequestLine(
            headers: ["apns-id": UUID().uuidString, "apns-push-type": "alert"],
            body: String(decoding: body, as: UTF8.self)
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try! encoder.encode(line))
    }

    /// `body` with `extra` inserted as its first top-level key.
    private static func withExtraKey(_ body: [UInt8], _ extra: String) -> [UInt8] {
        [UInt8(ascii: "{")] + Array(extra.utf8) + [UInt8(ascii: ",")] + body.dropFirst()
    }

    private static func cases(_ fixture: FilterFixture) throws -> [Case] {
        let text = { (s: String) throws -> [UInt8] in try fixture.body(FilterFixture.text(s)) }
        let big = try text("padded to one byte over the limit")
        let tooLarge = big + Array(repeating: 0x20, count: 4_097 - big.count)
        return [
            Case(
                id: "valid request line",
                bytes: Self.requestLine(try text("first")),
                decision: "alert",
                reason: "text"
            ),
            Case(id: "empty line", bytes: [], decision: "fallback", reason: "malformed-envelope"),
            Case(
                id: "binary bytes",
                bytes: [0x00, 0x01, 0x02, 0xFF, 0xFE, 0x7F, 0x80, 0x1B, 0x5B],
                decision: "fallback",
                reason: "malformed-envelope"
            ),
            Case(
                id: "invalid UTF-8 inside a JSON string",
                bytes: Array("{\"body\":\"".utf8) + [0xC3, 0x28, 0xFF] + [0x22, 0x7D],
                decision: "fallback",
                reason: "malformed-envelope"
            ),
            Case(
                id: "100 KB line",
                bytes: Array("{\"body\":\"".utf8) + Array(repeating: 0x41, count: 100_000) + [0x22, 0x7D],
                decision: "fallback",
                reason: "too-large"
            ),
            Case(id: "[]", bytes: Array("[]".utf8), decision: "fallback", reason: "malformed-envelope"),
            Case(id: "null", bytes: Array("null".utf8), decision: "fallback", reason: "malformed-envelope"),
            Case(
                id: "spool record with a non-string body",
                bytes: Array("{\"apns_id\":\"x\",\"body\":42,\"device_token\":\"ab\",\"seq\":8}".utf8),
                decision: "fallback",
                reason: "foreign-payload"
            ),
            Case(
                id: "request line, 4,097-byte body",
                bytes: Self.requestLine(tooLarge),
                decision: "fallback",
                reason: "too-large"
            ),
            Case(
                id: "10,000 levels of nesting",
                bytes: Array(repeating: 0x5B, count: 10_000) + Array(repeating: 0x5D, count: 10_000),
                decision: "fallback",
                reason: "too-large"
            ),
            Case(id: "{}", bytes: Array("{}".utf8), decision: "fallback", reason: "foreign-payload"),
            Case(id: "spaces only", bytes: Array("    ".utf8), decision: "fallback", reason: "malformed-envelope"),
            Case(
                id: "bare APNs body without e2ee",
                bytes: Array("{\"aps\":{\"alert\":{\"title\":\"x\"}}}".utf8),
                decision: "fallback",
                reason: "foreign-payload"
            ),
            Case(
                id: "body_base64 not base64",
                bytes: Array("{\"body_base64\":\"***\"}".utf8),
                decision: "fallback",
                reason: "foreign-payload"
            ),
            Case(id: "a number", bytes: Array("42".utf8), decision: "fallback", reason: "malformed-envelope"),
            Case(
                id: "a string",
                bytes: Array("\"just a string\"".utf8),
                decision: "fallback",
                reason: "malformed-envelope"
            ),
            Case(id: "valid bare APNs body", bytes: try text("bare"), decision: "alert", reason: "text"),
            Case(
                id: "envelope too short",
                bytes: Array("{\"body\":\"{\\\"e2ee\\\":\\\"AQ==\\\"}\",\"device_token\":\"ab\",\"headers\":{}}".utf8),
                decision: "fallback",
                reason: "malformed-envelope"
            ),
            Case(
                id: "NUL after the JSON",
                bytes: Array("{\"body\":\"x\"}".utf8) + [0x00],
                decision: "fallback",
                reason: "malformed-envelope"
            ),
            Case(
                id: "valid line ending in CR LF",
                bytes: Self.requestLine(try text("crlf")) + [0x0D],
                decision: "alert",
                reason: "text"
            ),
            Case(
                id: "truncated JSON",
                bytes: Array("{\"body\":\"{\\\"aps\\\"".utf8),
                decision: "fallback",
                reason: "malformed-envelope"
            ),
            Case(
                id: "bare APNs body with an extra top-level body key",
                bytes: Self.withExtraKey(try text("extra body key"), "\"body\":\"x\""),
                decision: "alert",
                reason: "text"
            ),
            Case(
                id: "bare APNs body with an extra top-level body_base64 key",
                bytes: Self.withExtraKey(try text("extra body_base64 key"), "\"body_base64\":\"!!\""),
                decision: "alert",
                reason: "text"
            ),
            Case(id: "NaN", bytes: Array("NaN".utf8), decision: "fallback", reason: "malformed-envelope"),
            Case(
                id: "bare body, trailing garbage",
                bytes: try text("trailing") + Array(" garbage".utf8),
                decision: "fallback",
                reason: "malformed-envelope"
            ),
            Case(
                id: "4,097 bytes of non-JSON",
                bytes: Array(repeating: 0x78, count: 4_097),
                decision: "fallback",
                reason: "too-large"
            ),
            Case(
                id: "bare body, invalid UTF-8 in an extra key's value",
                bytes: Array("{\"x\":\"".utf8) + [0xC3, 0x28, 0xFF] + Array("\",".utf8)
                    + (try text("bad utf8")).dropFirst(),
                decision: "fallback",
                reason: "malformed-envelope"
            ),
            Case(
                id: "last line, no trailing newline",
                bytes: Self.requestLine(try text("last")),
                decision: "alert",
                reason: "text"
            ),
        ]
    }

    @Test("every line gets exactly one decision with the expected reason; exit 0")
    func garbageLines() async throws {
        let fixture = try FilterFixture()
        let cases = try Self.cases(fixture)
        var input: [UInt8] = []
        for (index, item) in cases.enumerated() {
            input += item.bytes
            if index < cases.count - 1 { input.append(0x0A) }
        }
        let inputPath = fixture.path("input.jsonl")
        try appendToFile(inputPath, input)

        let run = try await FilterProcess.run(
            ["run"] + fixture.accountArguments(state: fixture.path("state.sqlite")),
            stdin: inputPath,
            directory: fixture.directory,
            name: "malformed"
        )
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let (lines, torn) = JSONLines.split(run.stdout)
        #expect(!torn)
        #expect(lines.count == cases.count, "one decision per input line")
        let outcomes = DecisionFileChecks.outcomes(lines)
        #expect(JSONLines.seqs(lines) == (1...Int64(cases.count)).map { Optional($0) }, "seq = line number, in order")
        for (index, item) in cases.enumerated() {
            let got = outcomes[Int64(index + 1)]
            #expect(
                got?.decision == item.decision && got?.reason == item.reason,
                "line \(index + 1) (\(item.id)): expected \(item.decision)/\(item.reason), got \(String(describing: got))"
            )
        }
        // A fallback never carries ciphertext or the APNs placeholder: always the one generic alert.
        for line in lines where JSONLines.object(line)?["decision"] as? String == "fallback" {
            let alert = JSONLines.object(line)?["alert"] as? [String: Any]
            #expect(alert?["title"] as? String == "New notification")
        }
    }
}
