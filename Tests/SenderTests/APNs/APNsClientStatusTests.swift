import APNsGateway
import Crypto
import Foundation
import Logging
import TestSupport
import Testing

@testable import Sender

@Suite("APNs client against the gateway: every answer")
struct APNsClientStatusTests {
    @Test("200: accepted, apns-id echoed, delivered byte for byte, one attempt, one token, one h2 connection")
    func accepted() async throws {
        try await GatewayHarness.with { gateway in
            let logs = LogCapture()
            let client = try gateway.makeClient(logger: logs.logger)
            let request = GatewayHarness.push()
            let result = await client.send(request)
            await client.shutdown()

            #expect(result.status == 200)
            #expect(result.isSuccess)
            #expect(result.reason == nil)
            #expect(result.localOutcome == nil)
            #expect(result.attempts == 1)
            #expect(result.apnsID == request.apnsID)
            let records = gateway.sink.records
            #expect(records.count == 1)
            let record = try #require(records.first)
            #expect(record.apnsID == request.apnsID)
            #expect(record.deviceToken == GatewayHarness.deviceToken)
            #expect(record.bodyBytes == request.bodyBytes)
            #expect(record.headers == request.headers)
            #expect(record.headers["authorization"] == nil)
            #expect(await client.providerTokensIssued == 1)
            #expect(client.connectionsOpened == (http2: 1, http1: 0))
            // Logs carry the apns-id, never the body or any part of the device token (a prefix names the device too).
            #expect(logs.text.contains(request.apnsID ?? "-"))
            #expect(!logs.text.contains(String(GatewayHarness.deviceToken.prefix(8))))
            #expect(!logs.text.contains(GatewayHarness.deviceToken))
            #expect(!logs.text.contains("New message"))
            #expect(!logs.text.contains("bearer"))
        }
    }

    static let badRequests: [(String, @Sendable (inout [String: String]) -> Void, String)] = [
        ("MissingTopic", { $0["apns-topic"] = nil }, ""),
        ("TopicDisallowed", { $0["apns-topic"] = "com.other.app" }, ""),
        ("BadPriority", { $0["apns-priority"] = "7" }, ""),
        ("InvalidPushType", { $0["apns-push-type"] = "telepathy" }, ""),
        ("BadExpirationDate", { $0["apns-expiration"] = "soon" }, ""),
        ("BadMessageId", { $0["apns-id"] = "not-a-uuid" }, ""),
        ("BadCollapseId", { $0["apns-collapse-id"] = String(repeating: "c", count: 65) }, ""),
        ("PayloadEmpty", { _ in }, "empty-body"),
    ]

    @Test("400: each reason decoded, not retried, nothing delivered", arguments: 0..<badRequests.count)
    func badRequest(index: Int) async throws {
        let (expected, change, flag) = Self.badRequests[index]
        try await GatewayHarness.with { gateway in
            let sleeper = RecordingSleeper()
            let client = try gateway.makeClient(
                retryPolicy: try RetryPolicy(maxAttempts: 5, initialDelay: .milliseconds(1), sleep: sleeper.sleep)
            )
            let request =
                flag == "empty-body" ? GatewayHarness.push(body: "", change) : GatewayHarness.push(change)
            let result = await client.send(request)
            await client.shutdown()
            #expect(result.status == 400)
            #expect(result.reason == APNsReason(rawValue: expected))
            #expect(result.reason?.isKnown == true)
            #expect(result.attempts == 1)
            #expect(sleeper.recorded.isEmpty)
            #expect(gateway.sink.records.isEmpty)
        }
    }

    @Test("400 BadDeviceToken and DeviceTokenNotForTopic from the gateway's device registry")
    func deviceRegistryRejections() async throws {
        var devices = DeviceRegistry(requiresRegistration: true)
        let otherTopicToken = String(repeating: "be", count: 32)
        devices.register(GatewayHarness.deviceToken)
        devices.register(otherTopicToken, DeviceRegistry.Entry(topic: "com.example.other"))
        try await GatewayHarness.with(devices: devices) { gateway in
            let client = try gateway.makeClient()
            let results = await client.send([
                GatewayHarness.push(),
                GatewayHarness.push(token: String(repeating: "99", count: 32)),
                GatewayHarness.push(token: otherTopicToken),
            ])
            await client.shutdown()
            #expect(results.map(\.status) == [200, 400, 400])
            #expect(results.map(\.reason) == [nil, .badDeviceToken, .deviceTokenNotForTopic])
            #expect(results.map(\.attempts) == [1, 1, 1])
            #expect(gateway.sink.records.count == 1)
        }
    }

    @Test("403 InvalidProviderToken (wrong key) is not retried and signs no second token")
    func invalidProviderToken() async throws {
        try await GatewayHarness.with(registeredKey: P256.Signing.PrivateKey().publicKey) { gateway in
            let sleeper = RecordingSleeper()
            let client = try gateway.makeClient(
                retryPolicy: try RetryPolicy(maxAttempts: 5, initialDelay: .milliseconds(1), sleep: sleeper.sleep)
            )
            let results = await client.send([GatewayHarness.push(), GatewayHarness.push()])
            await client.shutdown()
            #expect(results.map(\.status) == [403, 403])
            #expect(results.map(\.reason) == [.invalidProviderToken, .invalidProviderToken])
            #expect(results.map(\.attempts) == [1, 1])
            #expect(await client.providerTokensIssued == 1)
            #expect(sleeper.recorded.isEmpty)
            #expect(gateway.sink.records.isEmpty)
        }
    }

    @Test("403 BadEnvironmentKeyIdInToken (a production key on the development host) is not retried")
    func badEnvironmentKey() async throws {
        try await GatewayHarness.with(keyEnvironment: .production) { gateway in
            let client = try gateway.makeClient()
            let result = await client.send(GatewayHarness.push())
            await client.shutdown()
            #expect(result.status == 403)
            #expect(result.reason == .badEnvironmentKeyIdInToken)
            #expect(result.attempts == 1)
            #expect(await client.providerTokensIssued == 1)
        }
    }

    @Test("404 BadPath (a wrong path prefix) and 405 MethodNotAllowed are results, not retried")
    func badPathAndMethod() async throws {
        try await GatewayHarness.with { gateway in
            let wrongPath = try gateway.makeClient(
                retryPolicy: try RetryPolicy(maxAttempts: 4, initialDelay: .zero),
                pathPrefix: "/v9"
            )
            let notFound = await wrongPath.send(GatewayHarness.push())
            await wrongPath.shutdown()
            #expect(notFound.status == 404)
            #expect(notFound.reason == .badPath)
            #expect(notFound.attempts == 1)

            let putClient = try gateway.makeClient(
                retryPolicy: try RetryPolicy(maxAttempts: 4, initialDelay: .zero),
                method: "PUT"
            )
            let notAllowed = await putClient.send(GatewayHarness.push())
            await putClient.shutdown()
            #expect(notAllowed.status == 405)
            #expect(notAllowed.reason == .methodNotAllowed)
            #expect(notAllowed.attempts == 1)
            #expect(gateway.sink.records.isEmpty)
        }
    }

    @Test("410 marks the token inactive with its timestamp; the next send is refused locally, no request made")
    func unregistered() async throws {
        let since = Date(timeIntervalSince1970: 1_790_000_000.250)
        var devices = DeviceRegistry()
        devices.markUnregistered(GatewayHarness.deviceToken, at: since)
        try await GatewayHarness.with(devices: devices) { gateway in
            let folder = try TemporaryFolder()
            defer { folder.cleanup() }
            let registry = try TokenRegistry(persistingTo: folder.file("inactive.json"), logger: Logger(label: "test"))
            let client = try gateway.makeClient(
                retryPolicy: try RetryPolicy(maxAttempts: 4, initialDelay: .zero),
                registry: registry
            )
            let first = await client.send(GatewayHarness.push())
            #expect(first.status == 410)
            #expect(first.reason == .unregistered)
            #expect(first.timestamp == 1_790_000_000_250)
            #expect(first.attempts == 1)
            #expect(await registry.entry(for: GatewayHarness.deviceToken)?.timestamp == 1_790_000_000_250)

            // The gateway would now accept the token: if the client sent, the push would be delivered.
            gateway.server.updateDevices { $0.register(GatewayHarness.deviceToken) }
            let second = await client.send(GatewayHarness.push())
            #expect(second.localOutcome == .tokenInactive(since: 0))
            #expect(second.status == nil)
            #expect(second.attempts == 0)
            #expect(gateway.sink.records.isEmpty)

            // The registry file carries the decision to the next process.
            let reloaded = try TokenRegistry(persistingTo: folder.file("inactive.json"), logger: Logger(label: "test"))
            #expect(await reloaded.isInactive(GatewayHarness.deviceToken))

            // Reactivating (the app registered again) lets the push through.
            await registry.reactivate(GatewayHarness.deviceToken)
            let third = await client.send(GatewayHarness.push())
            await client.shutdown()
            #expect(third.status == 200)
            #expect(gateway.sink.records.count == 1)
        }
    }

    @Test("410 ExpiredToken is handled like Unregistered")
    func expiredToken() async throws {
        var devices = DeviceRegistry()
        devices.markExpired(GatewayHarness.deviceToken, at: Date(timeIntervalSince1970: 1_780_000_000))
        try await GatewayHarness.with(devices: devices) { gateway in
            let client = try gateway.makeClient()
            let results = await client.send([GatewayHarness.push(), GatewayHarness.push()])
            await client.shutdown()
            #expect(results[0].status == 410)
            #expect(results[0].reason == .expiredToken)
            #expect(results[0].timestamp == 1_780_000_000_000)
            #expect(results[1].localOutcome == .tokenInactive(since: 0))
            #expect(await client.tokenRegistry.isInactive(GatewayHarness.deviceToken))
        }
    }

    @Test("413 PayloadTooLarge above 4096 bytes is not retried; exactly 4096 is accepted")
    func payloadTooLarge() async throws {
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient(retryPolicy: try RetryPolicy(maxAttempts: 4, initialDelay: .zero))
            func body(size: Int) -> String {
                let prefix = #"{"aps":{"alert":{"title":"x"},"mutable-content":1},"e2ee":""#
                let suffix = #""}"#
                return prefix + String(repeating: "A", count: size - prefix.utf8.count - suffix.utf8.count) + suffix
            }
            let results = await client.send([
                GatewayHarness.push(body: body(size: 4096)),
                GatewayHarness.push(body: body(size: 4097)),
            ])
            await client.shutdown()
            #expect(results.map(\.status) == [200, 413])
            #expect(results[1].reason == .payloadTooLarge)
            #expect(results[1].attempts == 1)
            #expect(gateway.sink.records.count == 1)
        }
    }
}
