import E2EECore
import Foundation
import Testing

@testable import Sender

@Suite("APNs reasons and error bodies")
struct APNsReasonTests {
    static let documentedStrings = [
        "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
        "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
        "MissingTopic", "PayloadEmpty", "TopicDisallowed", "BadCertificate", "BadCertificateEnvironment",
        "ExpiredProviderToken", "Forbidden", "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken",
        "BadEnvironmentKeyIdInToken", "BadEnvironmentKeyInToken", "BadPath", "MethodNotAllowed", "ExpiredToken",
        "Unregistered", "PayloadTooLarge", "TooManyProviderTokenUpdates", "TooManyRequests", "InternalServerError",
        "ServiceUnavailable", "Shutdown",
    ]

    @Test("every documented reason is known and round-trips through JSON", arguments: documentedStrings)
    func documented(raw: String) throws {
        let reason = APNsReason(rawValue: raw)
        #expect(reason.isKnown)
        #expect(APNsReason.documented.contains(reason))
        let decoded = try JSONDecoder().decode(APNsReason.self, from: Data("\"\(raw)\"".utf8))
        #expect(decoded == reason)
        #expect(String(decoding: try JSONEncoder().encode(reason), as: UTF8.self) == "\"\(raw)\"")
    }

    @Test("the static members spell Apple's strings")
    func spellings() {
        #expect(APNsReason.documented.count == Self.documentedStrings.count)
        #expect(APNsReason.expiredProviderToken.rawValue == "ExpiredProviderToken")
        #expect(APNsReason.unregistered.rawValue == "Unregistered")
        #expect(APNsReason.badDeviceToken.rawValue == "BadDeviceToken")
        #expect(APNsReason.tooManyRequests.rawValue == "TooManyRequests")
    }

    @Test("a new reason keeps its string and is not known")
    func unknownString() {
        let reason = APNsReason(rawValue: "SomethingNewFromApple")
        #expect(!reason.isKnown)
        #expect(reason.description == "SomethingNewFromApple")
        #expect(reason != .unknown)
    }

    @Test("error bodies decode reason and timestamp, number or string, and tolerate junk")
    func errorBodies() {
        let bodies: [(String, APNsReason?, Int64?)] = [
            (#"{"reason":"BadDeviceToken"}"#, .badDeviceToken, nil),
            (#"{"reason":"Unregistered","timestamp":1700000000123}"#, .unregistered, 1_700_000_000_123),
            (#"{"reason":"ExpiredToken","timestamp":"1700000000123"}"#, .expiredToken, 1_700_000_000_123),
            (#"{"reason":"Brand New","extra":[1,2]}"#, APNsReason(rawValue: "Brand New"), nil),
            ("", nil, nil),
            ("<html>oops</html>", nil, nil),
            (#"{"reason":42}"#, nil, nil),
            ("[]", nil, nil),
        ]
        for (body, reason, timestamp) in bodies {
            let decoded = APNsClient.decodeErrorBody(Array(body.utf8))
            #expect(decoded.reason == reason, "body: \(body)")
            #expect(decoded.timestamp == timestamp, "body: \(body)")
        }
    }

    @Test("local outcomes compare by code and name themselves")
    func localOutcomes() {
        #expect(APNsLocalOutcome.tokenInactive(since: 1) == .tokenInactive(since: 2))
        #expect(APNsLocalOutcome.timeout(after: .seconds(1)) != .connectionError("x"))
        #expect(APNsLocalOutcome.timeout(after: .seconds(1)).code == "timeout")
        #expect(APNsLocalOutcome.timeout(after: .seconds(1)).kind == .timeout)
        #expect(APNsLocalOutcome.tokenInactive(since: 5).kind == APNsLocalOutcome.Code.tokenInactive)
        #expect(APNsLocalOutcome.tokenInactive(since: 5).message.contains("5"))
    }

    @Test("device tokens follow the one rule (DeviceToken): 64 to 200 hex digits, an even count")
    func hexTokens() {
        #expect(DeviceToken.problem(String(repeating: "aF09", count: 16)) == nil)
        #expect(DeviceToken.problem("") != nil)
        #expect(DeviceToken.problem("abcg" + String(repeating: "0", count: 60)) != nil)
        #expect(DeviceToken.problem("ab/../cd" + String(repeating: "0", count: 56)) != nil)
        #expect(DeviceToken.problem("ab cd" + String(repeating: "0", count: 59)) != nil)
    }
}
