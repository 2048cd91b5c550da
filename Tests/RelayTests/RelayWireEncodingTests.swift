import Foundation
import PushTransport
import RelayClient
import Testing

/// The two encodings a sender does by hand for every submit, against what Foundation makes of the same values.
@Suite("RelayClient's hand-written encodings: a path segment, a submit's body and its answer")
struct RelayWireEncodingTests {
    static let hostile: [String] = [
        "bob", "device-1.a_b~c", "", "with space", "a/b", "50%", "é", "😀", "\"quoted\"", "back\\slash",
        "line\nbreak", "\u{7f}", "\u{2028}", "?#[]@!$&'()*+,;=",
        String((0..<32).map { Character(Unicode.Scalar($0)!) }),
    ]

    @Test("a path segment is percent-encoded exactly as addingPercentEncoding with RFC 3986's unreserved set does")
    func pathSegment() {
        let unreserved = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
        )
        for value in Self.hostile {
            #expect(
                Identifiers.encodePathSegment(value) == value.addingPercentEncoding(withAllowedCharacters: unreserved)
            )
        }
        #expect(Identifiers.encodePathSegment("é/ x") == "%C3%A9%2F%20x")
        #expect(Identifiers.encodePathSegment("device-1.a_b~c") == "device-1.a_b~c")
    }

    @Test("a submit's body is byte for byte JSONEncoder's, sorted keys and slashes as they are")
    func submitBody() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for value in Self.hostile {
            let request = RelayAPI.SubmitRequest(
                pushes: [
                    .init(deviceID: value, envelope: "AAEC/+8="),
                    .init(deviceID: "phone", envelope: value),
                ]
            )
            #expect(RelayJSON.encode(request) == Array(try encoder.encode(request)), "\(Array(value.utf8))")
        }
        #expect(RelayJSON.encode(RelayAPI.SubmitRequest(pushes: [])) == Array(#"{"pushes":[]}"#.utf8))
        let one = RelayAPI.SubmitRequest(pushes: [.init(deviceID: "a\"b", envelope: "AA/B")])
        #expect(
            String(decoding: RelayJSON.encode(one), as: UTF8.self)
                == #"{"pushes":[{"device_id":"a\"b","envelope":"AA/B"}]}"#
        )
    }

    @Test("a random UUID is version 4 text as Foundation writes it, every random digit varies, none repeats")
    func uuidText() {
        let values = (0..<2000).map { _ in RandomID.uuidText() }
        #expect(Set(values).count == values.count)
        var seen = [Set<UInt8>](repeating: [], count: 36)
        for value in values {
            let bytes = Array(value.utf8)
            #expect(bytes.count == 36)
            #expect(UUID(uuidString: value)?.uuidString.lowercased() == value)
            for (index, byte) in bytes.enumerated() {
                if [8, 13, 18, 23].contains(index) {
                    #expect(byte == UInt8(ascii: "-"))
                } else {
                    #expect(Array("0123456789abcdef".utf8).contains(byte), "\(value)")
                }
                seen[index].insert(byte)
            }
            #expect(bytes[14] == UInt8(ascii: "4"))
            #expect(Array("89ab".utf8).contains(bytes[19]))
        }
        // Every position but the dashes and the version takes many values: no digit is left unwritten.
        for index in 0..<36 where ![8, 13, 14, 18, 23].contains(index) {
            #expect(seen[index].count >= (index == 19 ? 4 : 12), "position \(index)")
        }
    }

    @Test("a random request id is 16 lowercase hex digits, every one of them varies")
    func requestIDText() {
        let values = (0..<2000).map { _ in RandomID.hex8() }
        #expect(Set(values).count == values.count)
        var seen = [Set<UInt8>](repeating: [], count: 16)
        for value in values {
            let bytes = Array(value.utf8)
            #expect(bytes.count == 16)
            for (index, byte) in bytes.enumerated() {
                #expect(Array("0123456789abcdef".utf8).contains(byte))
                seen[index].insert(byte)
            }
        }
        for index in 0..<16 { #expect(seen[index].count >= 12, "position \(index)") }
    }

    static func responses() -> [RelayAPI.SubmitResponse] {
        var responses: [RelayAPI.SubmitResponse] = [
            .init(pushes: [], duplicate: false),
            .init(pushes: [], duplicate: true),
            .init(
                pushes: [
                    .init(deviceID: "phone", pushID: "0b6f5c1e-5d33-4e43-9b1a-2f0d3c4e5f60"),
                    .init(deviceID: "laptop", pushID: "1c7a6d2f-6e44-4f54-8c2b-3a1e4d5f6071"),
                ],
                duplicate: false
            ),
        ]
        for value in Self.hostile {
            responses.append(.init(pushes: [.init(deviceID: value, pushID: "p")], duplicate: true))
            responses.append(.init(pushes: [.init(deviceID: "d", pushID: value)], duplicate: false))
        }
        return responses
    }

    /// What both one-pass readers must do with `expected` (whose one device id is "a"): read it back as `written`,
    /// leave each of `otherLayouts` (valid JSON of the same value) to JSONDecoder, which must read `expected` from
    /// it, and refuse every cut of `written` and `written` with the device id's byte made invalid UTF-8.
    static func checkOnePassReader<T: Codable & Equatable>(
        _ read: ([UInt8]) -> T?,
        written: [UInt8],
        expected: T,
        otherLayouts: [String]
    ) throws {
        for text in otherLayouts {
            #expect(read(Array(text.utf8)) == nil, "\(text)")
            #expect(try JSONDecoder().decode(T.self, from: Data(text.utf8)) == expected)
        }
        #expect(read(written) == expected)
        for length in 0..<written.count {
            #expect(read(Array(written[..<length])) == nil, "cut at \(length)")
        }
        var invalid = written
        invalid[invalid.lastIndex(of: UInt8(ascii: "a"))!] = 0xff
        #expect(read(invalid) == nil)
    }

    @Test("a submit's answer is byte for byte JSONEncoder's, and reads back as it was written")
    func submitAnswer() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for response in Self.responses() {
            let bytes = RelayJSON.encode(response)
            #expect(bytes == Array(try encoder.encode(response)), "\(response)")
            // The one-pass reader takes what it can read exactly and leaves the rest to JSONDecoder, which must
            // then give the same value.
            let plain = response.pushes.allSatisfy { push in
                (Array(push.deviceID.utf8) + Array(push.pushID.utf8)).allSatisfy {
                    $0 >= 0x20 && $0 != 0x22 && $0 != 0x5c
                }
            }
            let fast = RelayJSON.decodeSubmitResponse(bytes)
            #expect(fast == (plain ? response : nil), "\(response)")
            #expect(try JSONDecoder().decode(RelayAPI.SubmitResponse.self, from: Data(bytes)) == response)
        }
        #expect(
            String(decoding: RelayJSON.encode(Self.responses()[2]), as: UTF8.self)
                == #"{"duplicate":false,"pushes":[{"device_id":"phone","push_id":"0b6f5c1e-5d33-4e43-9b1a-2f0d3c4e5f60"},"#
                + #"{"device_id":"laptop","push_id":"1c7a6d2f-6e44-4f54-8c2b-3a1e4d5f6071"}]}"#
        )
    }

    @Test(
        "the one-pass reader refuses every other layout, every cut and invalid UTF-8; JSONDecoder reads the valid ones"
    )
    func submitAnswerOtherLayouts() throws {
        let expected = RelayAPI.SubmitResponse(pushes: [.init(deviceID: "a", pushID: "b")], duplicate: true)
        let valid = [
            #"{ "duplicate":true,"pushes":[{"device_id":"a","push_id":"b"}]}"#,
            #"{"pushes":[{"device_id":"a","push_id":"b"}],"duplicate":true}"#,
            #"{"duplicate":true,"pushes":[{"push_id":"b","device_id":"a"}]}"#,
            #"{"duplicate":true,"pushes":[{"device_id":"a","push_id":"b","extra":1}]}"#,
            #"{"duplicate":true,"pushes":[{"device_id":"\u0061","push_id":"b"}]}"#,
            "{\"duplicate\":true,\"pushes\":[{\"device_id\":\"a\",\"push_id\":\"b\"}]}\n",
        ]
        try Self.checkOnePassReader(
            RelayJSON.decodeSubmitResponse,
            written: RelayJSON.encode(expected),
            expected: expected,
            otherLayouts: valid
        )
        #expect(RelayJSON.decodeSubmitResponse(Array(#"{"duplicate":TRUE,"pushes":[]}"#.utf8)) == nil)
        #expect(RelayJSON.decodeSubmitResponse(Array(#"{"duplicate":false,"pushes":[]}"#.utf8))?.pushes == [])
    }

    @Test("a submit's body reads back in one pass exactly as JSONDecoder reads it, or is left to JSONDecoder")
    func submitBodyReadBack() throws {
        for value in Self.hostile {
            for request in [
                RelayAPI.SubmitRequest(pushes: [.init(deviceID: value, envelope: "AAEC/+8=")]),
                RelayAPI.SubmitRequest(pushes: [
                    .init(deviceID: "phone", envelope: "AA=="), .init(deviceID: "d", envelope: value),
                ]),
            ] {
                let bytes = RelayJSON.encode(request)
                let plain = request.pushes.allSatisfy { push in
                    (Array(push.deviceID.utf8) + Array(push.envelope.utf8)).allSatisfy {
                        $0 >= 0x20 && $0 != 0x22 && $0 != 0x5c
                    }
                }
                #expect(RelayJSON.decodeSubmitRequest(bytes) == (plain ? request : nil), "\(request)")
                #expect(try JSONDecoder().decode(RelayAPI.SubmitRequest.self, from: Data(bytes)) == request)
            }
        }
        #expect(RelayJSON.decodeSubmitRequest(Array(#"{"pushes":[]}"#.utf8))?.pushes == [])
        let expected = RelayAPI.SubmitRequest(pushes: [.init(deviceID: "a", envelope: "b")])
        let valid = [
            #"{ "pushes":[{"device_id":"a","envelope":"b"}]}"#,
            #"{"pushes":[{"envelope":"b","device_id":"a"}]}"#,
            #"{"pushes":[{"device_id":"a","envelope":"b","extra":1}]}"#,
            #"{"extra":null,"pushes":[{"device_id":"a","envelope":"b"}]}"#,
            #"{"pushes":[{"device_id":"\u0061","envelope":"b"}]}"#,
            "{\"pushes\":[{\"device_id\":\"a\",\"envelope\":\"b\"}]}\n",
        ]
        try Self.checkOnePassReader(
            RelayJSON.decodeSubmitRequest,
            written: RelayJSON.encode(expected),
            expected: expected,
            otherLayouts: valid
        )
        #expect(RelayJSON.decodeSubmitRequest(Array(#"{"pushes":[{"device_id":1,"envelope":"b"}]}"#.utf8)) == nil)
    }

    @Test("every one-byte change of a submit's body: the one-pass read is nil or what JSONDecoder reads")
    func submitBodyMutations() throws {
        let request = RelayAPI.SubmitRequest(
            pushes: [.init(deviceID: "phone", envelope: "AAEC/+8="), .init(deviceID: "tablet-2", envelope: "AQ==")]
        )
        let written = RelayJSON.encode(request)
        let replacements: [UInt8] = [
            0x00, 0x20, 0x22, 0x2c, 0x3a, 0x5b, 0x5c, 0x5d, 0x7b, 0x7d, 0x41, 0x7f, 0xc3, 0xff,
        ]
        var read = 0
        var refused = 0
        for index in written.indices {
            for byte in replacements where byte != written[index] {
                var body = written
                body[index] = byte
                let decoded = try? JSONDecoder().decode(RelayAPI.SubmitRequest.self, from: Data(body))
                if let fast = RelayJSON.decodeSubmitRequest(body) {
                    #expect(fast == decoded, "byte \(index) as \(byte)")
                    read += 1
                } else {
                    refused += 1
                }
            }
        }
        // Changes inside a string's value keep the layout (the read sees them), the others change it.
        #expect(read > 0 && refused > 0, "read \(read), left to JSONDecoder \(refused)")
    }
}
