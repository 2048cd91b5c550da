import APNsGateway
import E2EECore
import Foundation
import Testing

@testable import Sender

/// `e2ee-send deliver`'s library half: request lines are parsed back unchanged and delivered byte for byte.
@Suite("Request lines delivered as they are")
struct RequestLineDeliveryTests {
    /// A real sealed push for Bob, as `e2ee-send text` prints it without `--deliver`.
    static func printedLine() throws -> (line: String, request: APNsRequest) {
        let alice = try Identity.generate(userID: "alice", displayName: "Alice", nowMs: 1)
        let bob = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1)
        let card = try bob.card(
            push: PushAddress(APNsAddress(topic: GatewayHarness.topic, deviceToken: GatewayHarness.deviceToken))
        )
        let request = try PushBuilder(identity: alice, topic: GatewayHarness.topic)
            .build(.text(TextMessage(threadID: "t", title: "Hi", body: "Lunch? \u{1F96A}")), to: card).request
        return (request.jsonLine(), request)
    }

    @Test("a printed line parses back to the same token, headers (apns-id included) and body bytes")
    func parseRoundTrip() throws {
        let (line, original) = try Self.printedLine()
        let parsed = try APNsRequest.parse(requestLine: line)
        #expect(parsed == original)
        #expect(parsed.bodyBytes == original.bodyBytes)
        #expect(parsed.apnsID == original.apnsID)
        #expect(parsed.headers.count == 5)
        #expect(parsed.jsonLine() == line)
    }

    @Test("a hand-edited body is kept exactly as written, not rebuilt")
    func editedBodyKept() throws {
        let line = #"{"body":"{\"e2ee\":\"AAAA\"}","device_token":"abcd","headers":{"apns-id":"X","x":"1"}}"#
        let parsed = try APNsRequest.parse(requestLine: line)
        #expect(parsed.body == #"{"e2ee":"AAAA"}"#)
        #expect(parsed.deviceToken == "abcd")
        #expect(parsed.headers == ["apns-id": "X", "x": "1"])
    }

    @Test(
        "malformed lines are bad requests whose message names the problem, never the content",
        arguments: [
            ("not json at all", "not valid JSON"),
            (#"{"device_token":"ab","headers":{}}"#, #"missing "body""#),
            (#"{"body":"SECRETBODY","headers":{}}"#, #"missing "device_token""#),
            (#"{"body":"SECRETBODY","device_token":"ab"}"#, #"missing "headers""#),
            (#"{"body":"SECRETBODY","device_token":"ab","headers":[]}"#, #"wrong type at "headers""#),
            (#"{"body":7,"device_token":"ab","headers":{}}"#, #"wrong type at "body""#),
            (#"{"body":"SECRETBODY","device_token":"ab","headers":{"apns-id":1}}"#, "wrong type at"),
        ]
    )
    func malformedLines(_ line: String, _ expected: String) {
        let error = #expect(throws: SenderError.self) { try APNsRequest.parse(requestLine: line) }
        #expect(error?.code == .badRequest)
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("SECRETBODY") == false)
    }

    @Test("delivering a parsed line sends the same bytes and headers; twice gives two identical records")
    func deliveredByteForByte() async throws {
        let (line, original) = try Self.printedLine()
        let request = try APNsRequest.parse(requestLine: line)
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient(window: 1)
            let results = await client.send([request, request])
            #expect(results.map(\.status) == [200, 200])
            #expect(results.map(\.apnsID) == [original.apnsID, original.apnsID])
            let records = gateway.sink.records
            try #require(records.count == 2)
            for record in records {
                #expect(record.bodyBytes == original.bodyBytes)
                #expect(record.headers == original.headers)
                #expect(record.apnsID == original.apnsID)
                #expect(record.deviceToken == original.deviceToken)
            }
            #expect(records.map(\.seq) == [1, 2])
        }
    }

    @Test("a tampered copy is delivered as written: same length, one byte different")
    func tamperedCopyDelivered() async throws {
        let (line, original) = try Self.printedLine()
        var tampered = try APNsRequest.parse(requestLine: line)
        var bytes = tampered.bodyBytes
        let index = bytes.count / 2
        bytes[index] = bytes[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        tampered.body = String(decoding: bytes, as: UTF8.self)
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient()
            let result = await client.send(try APNsRequest.parse(requestLine: tampered.jsonLine()))
            #expect(result.status == 200)
            let record = try #require(gateway.sink.records.first)
            #expect(record.bodyBytes == bytes)
            #expect(record.bodyBytes.count == original.bodyBytes.count)
            #expect(zip(record.bodyBytes, original.bodyBytes).filter { $0 != $1 }.count == 1)
        }
    }
}
