import APNsGateway
import Foundation
import PushTransport
import TestSupport
import Testing

/// `DeliveryRecord.jsonLine()` is `PushLine.jsonLine()`, written by hand for speed; these hold both to `JSONEncoder`'s
/// bytes (of the record, and of its `PushLine`).
@Suite("Delivery record JSON line")
struct DeliveryRecordLineTests {
    /// What the line was before it was written by hand, and what it must stay: `JSONEncoder`, sorted keys,
    /// slashes unescaped.
    private func reference(_ record: DeliveryRecord) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(record), as: UTF8.self)
        // The record's line is its PushLine's, whichever way it is written.
        #expect(String(decoding: try encoder.encode(record.pushLine), as: UTF8.self) == text)
        #expect(record.pushLine.jsonLine() == text)
        return text
    }

    private func record(body: [UInt8], headers: [String: String], seq: Int = 7) -> DeliveryRecord {
        DeliveryRecord(
            seq: seq,
            apnsID: "2A1B7C3D-0000-4000-8000-00000000ABCD",
            deviceToken: String(repeating: "ab", count: 32),
            headers: headers,
            bodyBytes: body,
            receivedAtMs: 1_767_225_600_123
        )
    }

    private let apnsHeaders = [
        "apns-push-type": "alert", "apns-priority": "10", "apns-expiration": "0", "apns-topic": "com.example.app",
        "apns-id": "2A1B7C3D-0000-4000-8000-00000000ABCD",
    ]

    @Test("every ASCII character, escaped or not, gives JSONEncoder's bytes")
    func everyASCIICharacter() throws {
        let body = Array(0...0x7F).map(UInt8.init) + Array(#"{"aps":{"alert":"a/b\c"}}"#.utf8)
        let record = self.record(body: body, headers: self.apnsHeaders)
        #expect(record.body != nil)
        #expect(record.jsonLine() == (try self.reference(record)))
        #expect(try DeliveryRecord.parse(jsonLine: record.jsonLine()) == record)
    }

    @Test("non-ASCII text, U+2028/U+2029 and emoji are written as UTF-8, as JSONEncoder does")
    func nonASCII() throws {
        let body = Array(#"{"t":"Grüße \#u{2028}\#u{2029} 📞 \#u{7F} 東京"}"#.utf8)
        let record = self.record(body: body, headers: self.apnsHeaders)
        #expect(record.jsonLine() == (try self.reference(record)))
    }

    @Test("a body that is not UTF-8 goes to body_base64, same bytes as JSONEncoder")
    func base64Body() throws {
        let record = self.record(body: [0xFF, 0xFE, 0x00, 0x7B], headers: [:], seq: 1)
        #expect(record.bodyBase64 == "//4Aew==")
        #expect(record.jsonLine() == (try self.reference(record)))
        #expect(record.jsonLine().contains(#""headers":{}"#))
    }

    @Test(
        "header names with digits, capitals or odd order sort as JSONEncoder sorts them",
        arguments: [
            ["apns-x10": "a", "apns-x2": "b", "apns-x1": "c"],
            ["apns-B": "1", "apns-a": "2", "apns-b": "3", "apns-A": "4"],
            ["apns-": "", "apns-id": "x", "apns-i": "y", "apns-collapse-id": "\"q\"\n"],
        ]
    )
    func headerOrder(headers: [String: String]) throws {
        let record = self.record(body: Array("{}".utf8), headers: headers)
        #expect(record.jsonLine() == (try self.reference(record)))
    }

    @Test("random bodies and headers: 500 records equal JSONEncoder's bytes")
    func randomRecords() throws {
        var generator = SeededGenerator(seed: 0x5EED)
        let alphabet = Array(0...0x7F).map { Character(Unicode.Scalar(UInt8($0))) } + ["é", "€", "😀", "\u{2028}"]
        for seq in 1...500 {
            let text = String(
                (0..<Int.random(in: 0...300, using: &generator)).map { _ in
                    alphabet.randomElement(using: &generator)!
                }
            )
            var headers: [String: String] = [:]
            for _ in 0..<Int.random(in: 0...6, using: &generator) {
                headers["apns-" + String((0..<4).map { _ in "ab1-Z9".randomElement(using: &generator)! })] = text
            }
            let record = self.record(body: Array(text.utf8), headers: headers, seq: seq)
            #expect(record.jsonLine() == (try self.reference(record)), "record \(seq)")
        }
    }
}
