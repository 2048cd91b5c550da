import APNsGateway
import Foundation
import Testing

/// One request shape and the answer APNs gives it.
struct RejectionCase: Sendable, CustomTestStringConvertible {
    var id: String
    var path: String = "/3/device/\(testToken)"
    var method: String = "POST"
    /// Edits the valid alert headers (authorization is filled in by the test).
    var headers: @Sendable ([(String, String)]) -> [(String, String)] = { $0 }
    var body: [UInt8]? = sampleBody
    var status: Int
    var reason: String

    var testDescription: String { self.id }
}

func replacing(_ name: String, with value: String?) -> @Sendable ([(String, String)]) -> [(String, String)] {
    { headers in
        let kept = headers.filter { $0.0 != name }
        return value.map { kept + [(name, $0)] } ?? kept
    }
}

let rejectionCases: [RejectionCase] = [
    RejectionCase(id: "other path", path: "/3/other/\(testToken)", status: 404, reason: "BadPath"),
    RejectionCase(id: "root path", path: "/", status: 404, reason: "BadPath"),
    RejectionCase(id: "GET", method: "GET", body: nil, status: 405, reason: "MethodNotAllowed"),
    RejectionCase(id: "PUT", method: "PUT", status: 405, reason: "MethodNotAllowed"),
    RejectionCase(id: "no token", path: "/3/device/", status: 400, reason: "MissingDeviceToken"),
    RejectionCase(id: "no token, no slash", path: "/3/device", status: 400, reason: "MissingDeviceToken"),
    RejectionCase(id: "non-hex token", path: "/3/device/zz\(testToken)", status: 400, reason: "BadDeviceToken"),
    RejectionCase(id: "odd-length token", path: "/3/device/abc", status: 400, reason: "BadDeviceToken"),
    RejectionCase(id: "token with a segment", path: "/3/device/ab/cd", status: 400, reason: "BadDeviceToken"),
    RejectionCase(
        id: "duplicate apns-topic",
        headers: { $0 + [("apns-topic", testTopic)] },
        status: 400,
        reason: "DuplicateHeaders"
    ),
    RejectionCase(
        id: "duplicate apns-priority",
        headers: { $0 + [("apns-priority", "10")] },
        status: 400,
        reason: "DuplicateHeaders"
    ),
    RejectionCase(
        id: "no authorization",
        headers: replacing("authorization", with: nil),
        status: 403,
        reason: "MissingProviderToken"
    ),
    RejectionCase(
        id: "authorization not bearer",
        headers: replacing("authorization", with: "basic abc"),
        status: 403,
        reason: "InvalidProviderToken"
    ),
    RejectionCase(
        id: "garbage JWT",
        headers: replacing("authorization", with: "bearer a.b.c"),
        status: 403,
        reason: "InvalidProviderToken"
    ),
    RejectionCase(
        id: "bad apns-id",
        headers: replacing("apns-id", with: "not-a-uuid"),
        status: 400,
        reason: "BadMessageId"
    ),
    RejectionCase(
        id: "apns-id with a short group",
        headers: replacing("apns-id", with: "8F3C2C1E-0B6A-4C4E-9D55-3E5E1F0A7B2"),
        status: 400,
        reason: "BadMessageId"
    ),
    RejectionCase(
        id: "apns-id one digit too long",
        headers: replacing("apns-id", with: "8F3C2C1E-0B6A-4C4E-9D55-3E5E1F0A7B2C0"),
        status: 400,
        reason: "BadMessageId"
    ),
    RejectionCase(
        id: "apns-id with the hyphens moved",
        headers: replacing("apns-id", with: "8F3C2C1E0-B6A-4C4E-9D55-3E5E1F0A7B2C"),
        status: 400,
        reason: "BadMessageId"
    ),
    RejectionCase(
        id: "apns-id with a non-hex digit",
        headers: replacing("apns-id", with: "8F3C2C1E-0B6A-4C4E-9D55-3E5E1F0A7B2G"),
        status: 400,
        reason: "BadMessageId"
    ),
    RejectionCase(
        id: "duplicate header far apart",
        headers: { [("apns-topic", testTopic)] + $0 },
        status: 400,
        reason: "DuplicateHeaders"
    ),
    RejectionCase(
        id: "unknown push type",
        headers: replacing("apns-push-type", with: "banner"),
        status: 400,
        reason: "InvalidPushType"
    ),
    RejectionCase(
        id: "negative expiration",
        headers: replacing("apns-expiration", with: "-1"),
        status: 400,
        reason: "BadExpirationDate"
    ),
    RejectionCase(
        id: "text expiration",
        headers: replacing("apns-expiration", with: "soon"),
        status: 400,
        reason: "BadExpirationDate"
    ),
    RejectionCase(id: "priority 7", headers: replacing("apns-priority", with: "7"), status: 400, reason: "BadPriority"),
    RejectionCase(
        id: "background at priority 10",
        headers: { replacing("apns-push-type", with: "background")($0) },
        status: 400,
        reason: "BadPriority"
    ),
    RejectionCase(id: "no topic", headers: replacing("apns-topic", with: nil), status: 400, reason: "MissingTopic"),
    RejectionCase(
        id: "topic of another app",
        headers: replacing("apns-topic", with: "com.other.app"),
        status: 400,
        reason: "TopicDisallowed"
    ),
    RejectionCase(
        id: "voip without .voip topic",
        headers: replacing("apns-push-type", with: "voip"),
        status: 400,
        reason: "BadTopic"
    ),
    RejectionCase(
        id: "alert to the .voip topic",
        headers: replacing("apns-topic", with: testTopic + ".voip"),
        status: 400,
        reason: "BadTopic"
    ),
    RejectionCase(
        id: "collapse id of 65 bytes",
        headers: replacing("apns-collapse-id", with: String(repeating: "c", count: 65)),
        status: 400,
        reason: "BadCollapseId"
    ),
    RejectionCase(id: "empty body", body: nil, status: 400, reason: "PayloadEmpty"),
    RejectionCase(id: "zero-length DATA", body: [], status: 400, reason: "PayloadEmpty"),
    RejectionCase(
        id: "4097-byte alert",
        body: Array(repeating: UInt8(ascii: " "), count: 4097),
        status: 413,
        reason: "PayloadTooLarge"
    ),
    RejectionCase(
        id: "5121-byte voip",
        headers: { replacing("apns-topic", with: testTopic + ".voip")(replacing("apns-push-type", with: "voip")($0)) },
        body: Array(repeating: UInt8(ascii: " "), count: 5121),
        status: 413,
        reason: "PayloadTooLarge"
    ),
]

@Suite("Request validation")
struct RequestValidationTests {
    @Test(
        "each malformed request gets APNs' status and JSON reason, and nothing is delivered",
        arguments: rejectionCases
    )
    func rejected(_ testCase: RejectionCase) async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let sink = InMemoryDeliverySink()
        let apnsID = "0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D"
        try await withGateway(directory: directory.path, key: key, sink: sink) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let headers = testCase.headers(
                alertHeaders(authorization: try key.bearer(issuedAt: Date()), apnsID: apnsID)
            )
            let response = try await client.send(
                path: testCase.path,
                method: testCase.method,
                headers: headers,
                body: testCase.body
            )
            #expect(response.status == testCase.status)
            #expect(response.reason == testCase.reason)
            #expect(response.header("content-type") == "application/json")
            #expect(response.bodyText == #"{"reason":"\#(testCase.reason)"}"#)
            let echoed = try #require(response.header("apns-id"))
            if testCase.reason != "BadMessageId", headers.contains(where: { $0.0 == "apns-id" && $0.1 == apnsID }) {
                #expect(echoed == apnsID)
            }
            #expect(UUID(uuidString: echoed) != nil)
        }
        #expect(sink.records.isEmpty)
    }

    @Test("limits are inclusive: a 4096-byte alert, a 5120-byte voip push and a 64-byte collapse id are accepted")
    func limitsAccepted() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let sink = InMemoryDeliverySink()
        let alertBody = Array(repeating: UInt8(ascii: "a"), count: 4096)
        let voipBody = Array(repeating: UInt8(ascii: "v"), count: 5120)
        try await withGateway(directory: directory.path, key: key, sink: sink) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let bearer = try key.bearer(issuedAt: Date())
            let alert = try await client.send(
                headers: alertHeaders(authorization: bearer) + [
                    ("apns-collapse-id", String(repeating: "c", count: 64))
                ],
                body: alertBody
            )
            #expect(alert.status == 200)
            let voipHeaders = replacing("apns-topic", with: testTopic + ".voip")(
                replacing("apns-push-type", with: "voip")(alertHeaders(authorization: bearer))
            )
            let voip = try await client.send(headers: voipHeaders, body: voipBody)
            #expect(voip.status == 200)
            let background = try await client.send(
                headers: replacing("apns-priority", with: "5")(
                    replacing("apns-push-type", with: "background")(alertHeaders(authorization: bearer))
                ),
                body: Array("{}".utf8)
            )
            #expect(background.status == 200)
        }
        #expect(sink.records.map(\.bodyBytes) == [alertBody, voipBody, Array("{}".utf8)])
        #expect(sink.records.map(\.seq) == [1, 2, 3])
    }
}
