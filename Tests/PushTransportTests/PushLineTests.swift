import Foundation
import PushTransport
import Testing

/// `PushLine` is every push written as a JSON line: one round trip per shape, each to exact bytes.
@Suite("PushLine: one JSON line for every push")
struct PushLineTests {
    static let token = String(repeating: "ab", count: 32)
    static let apnsID = "2A1B7C3D-0000-4000-8000-00000000ABCD"
    static let headers = [
        "apns-push-type": "alert", "apns-priority": "10", "apns-expiration": "0", "apns-topic": "com.example.app",
        "apns-id": apnsID,
    ]
    static let headersText =
        #"{"apns-expiration":"0","apns-id":"2A1B7C3D-0000-4000-8000-00000000ABCD","apns-priority":"10","#
        + #""apns-push-type":"alert","apns-topic":"com.example.app"}"#
    static let body = #"{"aps":{"alert":{"title":"a/b"},"mutable-content":1},"e2ee":"AAEC/+=="}"#
    static let bodyText = #""{\"aps\":{\"alert\":{\"title\":\"a/b\"},\"mutable-content\":1},\"e2ee\":\"AAEC/+==\"}""#

    /// The line writes `expected`, `JSONEncoder` writes the same bytes, and both decoders read it back.
    private func roundTrip(_ line: PushLine, _ expected: String, kind: PushLine.Kind) throws {
        #expect(line.jsonLine() == expected)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(String(decoding: try encoder.encode(line), as: UTF8.self) == expected)
        #expect(try JSONDecoder().decode(PushLine.self, from: Data(expected.utf8)) == line)
        let read = PushLine.read(Array(expected.utf8))
        #expect(read.kind == kind)
        if kind != .bareBody {
            #expect(read.line == line)
        }
    }

    @Test("a request line as e2ee-send prints it")
    func requestLine() throws {
        let line = PushLine(deviceToken: Self.token, headers: Self.headers, body: Self.body)
        try self.roundTrip(
            line,
            #"{"body":"# + Self.bodyText + #","device_token":""# + Self.token + #"","headers":"# + Self.headersText
                + "}",
            kind: .requestLine
        )
        #expect(line.bodyBytes == Array(Self.body.utf8))
    }

    @Test("a request line naming its device")
    func requestLineWithDevice() throws {
        let line = PushLine(deviceToken: Self.token, headers: Self.headers, body: Self.body, device: "phone-1")
        try self.roundTrip(
            line,
            #"{"body":"# + Self.bodyText + #","device":"phone-1","device_token":""# + Self.token + #"","headers":"#
                + Self.headersText + "}",
            kind: .requestLine
        )
    }

    @Test("a spool record with a UTF-8 body")
    func spoolRecordWithBody() throws {
        let line = PushLine(
            seq: 7,
            apnsID: Self.apnsID,
            deviceToken: Self.token,
            headers: Self.headers,
            bodyBytes: Array(Self.body.utf8),
            receivedAtMs: 1_767_225_600_123
        )
        #expect(line.body == Self.body && line.bodyBase64 == nil)
        try self.roundTrip(
            line,
            #"{"apns_id":""# + Self.apnsID + #"","body":"# + Self.bodyText + #","device_token":""# + Self.token
                + #"","headers":"# + Self.headersText + #","received_at_ms":1767225600123,"seq":7}"#,
            kind: .spoolRecord
        )
    }

    @Test("a spool record whose body is not UTF-8: body_base64")
    func spoolRecordWithBase64() throws {
        let line = PushLine(
            seq: 1,
            apnsID: Self.apnsID,
            deviceToken: Self.token,
            headers: [:],
            bodyBytes: [0xFF, 0xFE, 0x00, 0x7B],
            receivedAtMs: 5
        )
        #expect(line.body == nil && line.bodyBase64 == "//4Aew==")
        #expect(line.bodyBytes == [0xFF, 0xFE, 0x00, 0x7B])
        try self.roundTrip(
            line,
            #"{"apns_id":""# + Self.apnsID + #"","body_base64":"//4Aew==","device_token":""# + Self.token
                + #"","headers":{},"received_at_ms":5,"seq":1}"#,
            kind: .spoolRecord
        )
    }

    @Test("a payload kept while locked: never an input line")
    func pendingPayload() throws {
        let line = PushLine(seq: 42, apnsID: Self.apnsID, bodyBase64: "e30=")
        try self.roundTrip(
            line,
            #"{"apns_id":""# + Self.apnsID + #"","body_base64":"e30=","seq":42}"#,
            kind: .bareBody
        )
        #expect(line.bodyBytes == Array("{}".utf8))
        try self.roundTrip(PushLine(seq: 43), #"{"seq":43}"#, kind: .bareBody)
        #expect(PushLine(seq: 43).bodyBytes == nil)
    }

    @Test("escapes and key order match JSONEncoder for odd text in every string")
    func escapes() throws {
        let odd = "q\"b\\s/l\n\u{01}\u{7F} ü 📞 \u{2028}"
        let line = PushLine(
            seq: -1,
            apnsID: odd,
            deviceToken: odd,
            headers: [odd: odd, "apns-x10": "a", "apns-x2": "b", "apns-B": "c", "apns-a": "d"],
            body: odd,
            bodyBase64: "!!",
            receivedAtMs: Int64.max,
            device: odd
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(line.jsonLine() == String(decoding: try encoder.encode(line), as: UTF8.self))
        #expect(try JSONDecoder().decode(PushLine.self, from: Data(line.jsonLine().utf8)) == line)
        #expect(line.bodyBytes == Array(odd.utf8))
        #expect(PushLine(bodyBase64: "!!").bodyBytes == nil)
        #expect(PushLine().jsonLine() == "{}")
    }
}
