import Foundation
import Testing

@testable import Sender

/// The request-line fast path (`PushLineScanner`, then exactly `body`, `device_token` and `headers`) decodes what
/// `JSONDecoder` decodes, or declines: it may never differ.
@Suite("Request-line fast path: the same requests as JSONDecoder, or none")
struct RequestLineFastPathTests {
    static let requests: [APNsRequest] = [
        APNsRequest(
            deviceToken: String(repeating: "ab", count: 32),
            headers: [
                "apns-expiration": "0", "apns-id": "8E1D3A34-7B5E-4C8E-9D0F-1A2B3C4D5E6F", "apns-priority": "10",
                "apns-push-type": "alert", "apns-topic": "com.example.app",
            ],
            body: #"{"aps":{"alert":{"title":"New message"},"mutable-content":1},"e2ee":"AAEC/+=="}"#
        ),
        APNsRequest(deviceToken: "", headers: [:], body: ""),
        APNsRequest(
            deviceToken: "00ff",
            headers: ["x-odd": "tab\there \"quoted\" back\\slash /slash"],
            body: "line\nbreak\r\u{08}\u{0C} ünïcödé 🎉 \u{2028}"
        ),
    ]

    @Test("every line e2ee-send prints takes the fast path and decodes exactly as JSONDecoder does")
    func canonicalLines() throws {
        for request in Self.requests {
            let line = request.jsonLine()
            #expect(PushLineScanner.scan(line) == request.pushLine(), "\(line)")
            let fast = try #require(APNsRequest.scanned(requestLine: line), "declined: \(line)")
            #expect(fast == request)
            #expect(fast == (try JSONDecoder().decode(APNsRequest.self, from: Data(line.utf8))))
            #expect(try APNsRequest.parse(requestLine: line) == request)
        }
    }

    static let variants: [String] = [
        #"  { "headers" : { "a" : "b" } , "device_token" : "ab" , "body" : "{}" }  "#,
        #"{"body":"x","device_token":"ab","headers":{}}"#,
        #"{"body":"\u0041","device_token":"ab","headers":{}}"#,  // \u: declined, the decoder takes it
        #"{"body":"x","device_token":"ab","headers":{},"extra":1}"#,  // unknown key: declined, decoder ignores it
        #"{"body":"x","body":"y","device_token":"ab","headers":{}}"#,
        #"{"body":"x","device_token":"ab","headers":{"a":"1","a":"2"}}"#,
        #"{"body":"x","device_token":"ab"}"#,
        #"{"body":1,"device_token":"ab","headers":{}}"#,
        #"{"body":"x","device_token":"ab","headers":{"a":1}}"#,
        #"{"body":"x","device_token":"ab","headers":{}} trailing"#,
        #"{"body":"x\q","device_token":"ab","headers":{}}"#,
        "{\"body\":\"raw\ncontrol\",\"device_token\":\"ab\",\"headers\":{}}",
        #"{"body":"unterminated,"device_token":"ab","headers":{}}"#,
        #"{"body":"x","device_token":"ab","headers":{},}"#,
        "",
        "[]",
        // PushLine keys beyond the three: scanned, but the request-line path leaves them to the decoder as before.
        #"{"body":"x","device":"phone-1","device_token":"ab","headers":{}}"#,
        #"{"apns_id":"i","body":"x","device_token":"ab","headers":{},"received_at_ms":5,"seq":1}"#,
        #"{"body":"x","body_base64":"e30=","device_token":"ab","headers":{}}"#,
        #"{"body":"x","device_token":"ab","headers":{},"seq":1.5}"#,
        #"{"body":"x","device_token":"ab","headers":{},"e2ee":"AAEC"}"#,
        #"{"device_token":"ab","headers":{}}"#,
    ]

    @Test("any other line: the fast path declines or agrees with JSONDecoder", arguments: variants)
    func variantsAgree(line: String) throws {
        let decoded = try? JSONDecoder().decode(APNsRequest.self, from: Data(line.utf8))
        if let fast = APNsRequest.scanned(requestLine: line) {
            #expect(fast == decoded, "the fast path decoded what JSONDecoder decodes differently")
        }
        #expect((try? APNsRequest.parse(requestLine: line)) == decoded)
    }

    @Test("the whitespace variant and the empty headers are taken by the fast path; other keys are not")
    func fastPathTaken() {
        #expect(APNsRequest.scanned(requestLine: Self.variants[0])?.headers == ["a": "b"])
        #expect(APNsRequest.scanned(requestLine: Self.variants[1])?.body == "x")
        #expect(APNsRequest.scanned(requestLine: Self.variants[2]) == nil)
        // Scanned as a PushLine, but not exactly the three keys: the decoder reads them, as before.
        for line in Self.variants[16...18] {
            #expect(PushLineScanner.scan(line) != nil, "\(line)")
            #expect(APNsRequest.scanned(requestLine: line) == nil, "\(line)")
            #expect(
                (try? APNsRequest.parse(requestLine: line)) == APNsRequest(deviceToken: "ab", headers: [:], body: "x")
            )
        }
        #expect(PushLineScanner.scan(Self.variants[21]) == PushLine(deviceToken: "ab", headers: [:]))
        #expect(APNsRequest.scanned(requestLine: Self.variants[21]) == nil)
    }
}
