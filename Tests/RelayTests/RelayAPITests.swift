import E2EECore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import Relay

/// The HTTP API in-process (HummingbirdTesting's router client): every bad input gets its status and reason code,
/// and nothing is queued.
@Suite("Relay API: statuses, reason codes, nothing queued on refusal")
struct RelayAPITests {
    struct Answer {
        var status: Int
        var reason: String?
        var retryAfter: String?
        var body: String
    }

    /// Runs requests against a relay with alice (sender) and bob (phone + tablet) enrolled with `token`.
    static func withRelay(
        policy: RelayService.Policy = RelayService.Policy(),
        _ body:
            @escaping @Sendable (ServiceFixture, TestUser, TestUser, DeliveryToken, any TestClientProtocol) async throws
            -> Void
    ) async throws {
        let fixture = try await ServiceFixture(policy: policy)
        let cleanup: (ServiceFixture) async -> Void = { await $0.cleanup() }
        try await withCleanup(fixture, cleanup) { fixture in
            let alice = try TestUser.make("alice", devices: ["laptop"])
            let bob = try TestUser.make("bob")
            let token = DeliveryToken()
            try await fixture.enroll(bob, token: token)
            let app = Application(router: RelayRouter.build(service: fixture.service))
            try await app.test(.router) { client in try await body(fixture, alice, bob, token, client) }
        }
    }

    static func send(
        _ client: any TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        headers: HTTPFields = [:],
        body: [UInt8]? = nil
    ) async throws -> Answer {
        try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) }) {
            response in
            let text = String(buffer: response.body)
            let reason = (try? JSONDecoder().decode(RelayAPI.ErrorBody.self, from: Data(text.utf8)))?.error
            return Answer(
                status: Int(response.status.code),
                reason: reason,
                retryAfter: response.headers[HTTPField.Name("Retry-After")!],
                body: text
            )
        }
    }

    static func submitHeaders(token: DeliveryToken?, key: String? = UUID().uuidString) -> HTTPFields {
        var headers: HTTPFields = [:]
        if let token { headers[.authorization] = "Bearer \(token.hex)" }
        if let key { headers[HTTPField.Name("Idempotency-Key")!] = key }
        return headers
    }

    @Test("a valid submit answers 202 with one push id per device, and queues exactly those")
    func acceptedSubmit() async throws {
        try await Self.withRelay { fixture, alice, bob, token, client in
            let body = submitBody([
                ("phone", try bob.sealText(from: alice.devices[0], to: "phone")),
                ("tablet", try bob.sealText(from: alice.devices[0], to: "tablet")),
            ])
            let answer = try await Self.send(
                client,
                .post,
                "/v1/users/bob/pushes",
                headers: Self.submitHeaders(token: token),
                body: body
            )
            #expect(answer.status == 202)
            let response = try JSONDecoder().decode(RelayAPI.SubmitResponse.self, from: Data(answer.body.utf8))
            #expect(response.pushes.map(\.deviceID) == ["phone", "tablet"])
            #expect(response.duplicate == false)
            #expect(try await fixture.store.counts() == [.queued: 2])
        }
    }

    struct BadSubmit: Sendable, CustomTestStringConvertible {
        var id: String
        var status: Int
        var reason: String
        var testDescription: String { self.id }
    }

    @Test(
        "every bad submit is refused with its code and queues nothing",
        arguments: [
            BadSubmit(id: "malformed JSON", status: 400, reason: "malformed-json"),
            BadSubmit(id: "JSON of the wrong shape", status: 400, reason: "malformed-json"),
            BadSubmit(id: "no idempotency key", status: 400, reason: "missing-idempotency-key"),
            BadSubmit(id: "bad idempotency key", status: 400, reason: "bad-idempotency-key"),
            BadSubmit(id: "no pushes", status: 400, reason: "bad-push-count"),
            BadSubmit(id: "17 pushes", status: 400, reason: "bad-push-count"),
            BadSubmit(id: "a device twice", status: 400, reason: "duplicate-device"),
            BadSubmit(id: "envelope not base64", status: 400, reason: "malformed-envelope"),
            BadSubmit(id: "envelope truncated", status: 400, reason: "malformed-envelope"),
            BadSubmit(id: "envelope of a future version", status: 400, reason: "malformed-envelope"),
            BadSubmit(id: "bad device id", status: 400, reason: "bad-device-id"),
            BadSubmit(id: "unknown user", status: 404, reason: "unknown-user"),
            BadSubmit(id: "no delivery token", status: 401, reason: "missing-delivery-token"),
            BadSubmit(id: "delivery token not hex", status: 403, reason: "bad-delivery-token"),
            BadSubmit(id: "another user's token", status: 403, reason: "bad-delivery-token"),
            BadSubmit(id: "unknown device", status: 404, reason: "unknown-device"),
            BadSubmit(id: "oversized body", status: 413, reason: "body-too-large"),
        ]
    )
    func badSubmit(_ bad: BadSubmit) async throws {
        try await Self.withRelay { fixture, alice, bob, token, client in
            let sealed = try bob.sealText(from: alice.devices[0], to: "phone")
            let good = Data(sealed.envelope.serialized).base64EncodedString()
            func pushes(_ list: [(String, String)]) -> [UInt8] {
                RelayRouter.encode(
                    RelayAPI.SubmitRequest(pushes: list.map { RelayAPI.SubmitPush(deviceID: $0.0, envelope: $0.1) })
                )
            }
            var uri = "/v1/users/bob/pushes"
            var headers = Self.submitHeaders(token: token)
            var body = pushes([("phone", good)])
            switch bad.id {
            case "malformed JSON": body = Array(#"{"pushes": [ "#.utf8)
            case "JSON of the wrong shape": body = Array(#"{"pushes": {"device_id": "phone"}}"#.utf8)
            case "no idempotency key": headers = Self.submitHeaders(token: token, key: nil)
            case "bad idempotency key": headers = Self.submitHeaders(token: token, key: "has space")
            case "no pushes": body = pushes([])
            case "17 pushes": body = pushes((0..<17).map { ("d\($0)", good) })
            case "a device twice": body = pushes([("phone", good), ("phone", good)])
            case "envelope not base64": body = pushes([("phone", "not base64!")])
            case "envelope truncated":
                body = pushes([("phone", Data(sealed.envelope.serialized.prefix(100)).base64EncodedString())])
            case "envelope of a future version":
                body = pushes([("phone", Data([0x02] + sealed.envelope.serialized.dropFirst()).base64EncodedString())])
            case "bad device id": body = pushes([("Phone!", good)])
            case "unknown user": uri = "/v1/users/carol/pushes"
            case "no delivery token": headers = Self.submitHeaders(token: nil)
            case "delivery token not hex":
                headers[.authorization] = "Bearer zz"
            case "another user's token": headers = Self.submitHeaders(token: DeliveryToken())
            case "unknown device": body = pushes([("watch", good)])
            case "oversized body": body = [UInt8](repeating: 0x20, count: 97 * 1024)
            default: Issue.record("no case \(bad.id)")
            }
            let answer = try await Self.send(client, .post, uri, headers: headers, body: body)
            #expect(answer.status == bad.status, "\(answer.body)")
            if bad.status == 413 {
                #expect(answer.reason == nil || answer.reason == bad.reason)
            } else {
                #expect(answer.reason == bad.reason, "\(answer.body)")
            }
            #expect(try await fixture.pushCount() == 0)
        }
    }

    @Test("a retried submit (same key, same pushes) queues once and says duplicate; same key, other pushes: 409")
    func idempotentRetry() async throws {
        try await Self.withRelay { fixture, alice, bob, token, client in
            let body = submitBody([("phone", try bob.sealText(from: alice.devices[0], to: "phone"))])
            let headers = Self.submitHeaders(token: token, key: "retry-1")
            let first = try await Self.send(client, .post, "/v1/users/bob/pushes", headers: headers, body: body)
            let second = try await Self.send(client, .post, "/v1/users/bob/pushes", headers: headers, body: body)
            #expect(first.status == 202)
            #expect(second.status == 202)
            let a = try JSONDecoder().decode(RelayAPI.SubmitResponse.self, from: Data(first.body.utf8))
            let b = try JSONDecoder().decode(RelayAPI.SubmitResponse.self, from: Data(second.body.utf8))
            #expect(a.pushes == b.pushes)
            #expect(a.duplicate == false)
            #expect(b.duplicate == true)
            #expect(try await fixture.pushCount() == 1)

            let other = submitBody([("phone", try bob.sealText(from: alice.devices[0], to: "phone"))])
            let reused = try await Self.send(client, .post, "/v1/users/bob/pushes", headers: headers, body: other)
            #expect(reused.status == 409)
            #expect(reused.reason == "idempotency-key-reused")
            #expect(try await fixture.pushCount() == 1)
            let metrics = String(decoding: fixture.metrics.render(), as: UTF8.self)
            #expect(metrics.contains("relay_duplicate_submits_total 1"))
        }
    }

    @Test("per-recipient limit: the submit past the burst gets 429 with Retry-After and queues nothing")
    func recipientRateLimit() async throws {
        var policy = RelayService.Policy()
        policy.recipientRatePerMinute = 60
        policy.recipientBurst = 16
        try await Self.withRelay(policy: policy) { fixture, alice, bob, token, client in
            var accepted = 0
            var limited: Answer?
            for _ in 0..<9 {
                let body = submitBody([
                    ("phone", try bob.sealText(from: alice.devices[0], to: "phone")),
                    ("tablet", try bob.sealText(from: alice.devices[0], to: "tablet")),
                ])
                let answer = try await Self.send(
                    client,
                    .post,
                    "/v1/users/bob/pushes",
                    headers: Self.submitHeaders(token: token),
                    body: body
                )
                if answer.status == 202 {
                    accepted += 1
                } else {
                    limited = answer
                    break
                }
            }
            // Burst 16 = 8 submits of 2; the 9th needs 2 tokens a second apart at 1 a second: wait 2 s.
            #expect(accepted == 8)
            #expect(limited?.status == 429)
            #expect(limited?.reason == "rate-limited")
            #expect(limited?.retryAfter == "2")
            #expect(try await fixture.pushCount() == 16)
            // After the wait, it fits again.
            fixture.clock.advance(ms: 2000)
            let body = submitBody([
                ("phone", try bob.sealText(from: alice.devices[0], to: "phone")),
                ("tablet", try bob.sealText(from: alice.devices[0], to: "tablet")),
            ])
            let after = try await Self.send(
                client,
                .post,
                "/v1/users/bob/pushes",
                headers: Self.submitHeaders(token: token),
                body: body
            )
            #expect(after.status == 202)
            let metrics = String(decoding: fixture.metrics.render(), as: UTF8.self)
            #expect(metrics.contains(#"relay_rate_limited_submits_total{scope="recipient"} 1"#))
        }
    }

    @Test("per-token limit is separate from the recipient's: 429 scope token")
    func tokenRateLimit() async throws {
        var policy = RelayService.Policy()
        policy.tokenRatePerMinute = 30
        policy.tokenBurst = 16
        try await Self.withRelay(policy: policy) { fixture, alice, bob, token, client in
            var statuses: [Int] = []
            for _ in 0..<17 {
                let body = submitBody([("phone", try bob.sealText(from: alice.devices[0], to: "phone"))])
                statuses.append(
                    try await Self.send(
                        client,
                        .post,
                        "/v1/users/bob/pushes",
                        headers: Self.submitHeaders(token: token),
                        body: body
                    ).status
                )
            }
            #expect(statuses == Array(repeating: 202, count: 16) + [429])
            let metrics = String(decoding: fixture.metrics.render(), as: UTF8.self)
            #expect(metrics.contains(#"relay_rate_limited_submits_total{scope="token"} 1"#))
        }
    }

    @Test("list fetch returns the list as signed and each device's push state")
    func fetchList() async throws {
        try await Self.withRelay { fixture, _, bob, _, client in
            let answer = try await Self.send(client, .get, "/v1/users/bob/device-list")
            #expect(answer.status == 200)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
            let list = try DeviceList.parse(Array(try JSONSerialization.data(withJSONObject: object["device_list"]!)))
            #expect(list == bob.list)
            let devices = try JSONDecoder().decode(
                [RelayAPI.DeviceState].self,
                from: try JSONSerialization.data(withJSONObject: object["devices"]!)
            )
            #expect(devices == [.init(deviceID: "phone", push: .active), .init(deviceID: "tablet", push: .active)])
            let missing = try await Self.send(client, .get, "/v1/users/nobody/device-list")
            #expect(missing.status == 404)
            #expect(missing.reason == "unknown-user")
        }
    }

    @Test("an unknown path answers 404 with a reason code")
    func unknownPath() async throws {
        try await Self.withRelay { _, _, _, _, client in
            let answer = try await Self.send(client, .get, "/v2/users/bob/device-list")
            #expect(answer.status == 404)
            #expect(answer.reason == "not-found")
        }
    }

    @Test("refusals are the API's JSON byte for byte; a refused submit still names its request (X-Request-Id)")
    func refusalBytes() async throws {
        try await Self.withRelay { _, _, _, _, client in
            // No route for the path, and a route that does not take the method: both not found.
            for (method, path) in [
                (HTTPRequest.Method.get, "/v2/users/bob/device-list"), (.delete, "/v1/users/bob/device-list"),
            ] {
                try await client.execute(uri: path, method: method) { response in
                    #expect(response.status == .notFound)
                    #expect(response.headers[.contentType] == "application/json")
                    let message = "no such endpoint: \(method) \(path); see docs/RELAY.md for the v1 API"
                    let expected = RelayRouter.encode(RelayAPI.ErrorBody(error: "not-found", message: message))
                    #expect(Array(buffer: response.body) == expected)
                }
            }
            try await client.execute(uri: "/v1/users/bob/pushes", method: .post, body: ByteBuffer()) { response in
                #expect(response.status.code >= 400)
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.headers[HTTPField.Name("X-Request-Id")!]?.isEmpty == false)
                let body = Array(buffer: response.body)
                let refusal = try JSONDecoder().decode(RelayAPI.ErrorBody.self, from: Data(body))
                #expect(body == RelayRouter.encode(refusal))
            }
        }
    }

    @Test("health and metrics answer")
    func healthAndMetrics() async throws {
        try await Self.withRelay { _, _, _, _, client in
            let health = try await Self.send(client, .get, "/v1/health")
            #expect(health.status == 200)
            #expect(health.body == #"{"status":"ok"}"#)
            let metrics = try await Self.send(client, .get, "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.body.contains("relay_queue_depth{state=\"queued\"} 0"))
        }
    }
}
