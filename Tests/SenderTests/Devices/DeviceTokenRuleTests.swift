import Crypto
import E2EECore
import Foundation
import Logging
import RelayClient
import TestSupport
import Testing

@testable import Sender

/// One device-token rule (``DeviceToken``: 64 to 200 hex digits, an even count), wherever a token is accepted.
/// Before, six checks disagreed: `keygen --device-token` with 16 digits passed the sender's check (16-200) and was
/// then refused by the card's (64-200) as a key-file error, exit 66; a send's `--device-token` override and the APNs
/// client took it; the filter's `--device-token` took any even hex.
@Suite("One device-token rule")
struct DeviceTokenRuleTests {
    static let sixteen = "0123456789abcdef"
    static let valid = String(repeating: "0f", count: 32)

    @Test(
        "the rule and what it says",
        arguments: [
            ("0123456789abcdef", "got only 16 digits"),
            (String(repeating: "ab", count: 101), "got 202 digits"),
            (String(repeating: "a", count: 65), "got an odd count (65)"),
            ("g" + String(repeating: "a", count: 63), "character 1 is not a hex digit"),
            ("", "got only 0 digits"),
        ]
    )
    func rule(token: String, says: String) {
        let problem = DeviceToken.problem(token)
        #expect(problem?.hasPrefix(DeviceToken.rule) == true)
        #expect(problem?.hasSuffix(says) == true, "\(problem ?? "accepted")")
        #expect(DeviceToken.normalized(token) == nil)
    }

    @Test("64 and 200 digits, either case, are tokens")
    func bounds() {
        #expect(DeviceToken.problem(Self.valid) == nil)
        #expect(DeviceToken.problem(String(repeating: "AB", count: 100)) == nil)
        #expect(
            DeviceToken.normalized("AB" + String(repeating: "cd", count: 31)) == "ab"
                + String(repeating: "cd", count: 31)
        )
    }

    @Test("a 16-digit token gets the same answer everywhere: refused")
    func sixteenDigitsEverywhere() async throws {
        // The sender's check, the card's and the relay's.
        #expect(throws: SenderError(.badDeviceToken, "")) { try PushBuilder.validateDeviceToken(Self.sixteen) }
        #expect(throws: SenderError(.badDeviceToken, "")) { try DeviceFiles.push(token: Self.sixteen, topic: "t") }
        let phone = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: 1)
        #expect(throws: E2EEError(.keyFile, "")) {
            try DeviceList.create(
                for: phone,
                push: PushAddress(APNsAddress(topic: "t", deviceToken: Self.sixteen)),
                nowMs: 2
            )
        }
        #expect(throws: RelayError.self) {
            try RegisteredAddress(apns: APNsAddress(topic: "t", deviceToken: Self.sixteen), environment: "development")
                .check()
        }
        #expect(throws: Never.self) {
            try RegisteredAddress(apns: APNsAddress(topic: "t", deviceToken: Self.valid), environment: "development")
                .check()
        }

        // A send's override, and a first device with it: nothing is written.
        let list = try DeviceList.create(for: phone, push: nil, nowMs: 2)
        #expect(throws: SenderError(.badDeviceToken, "")) {
            try PushBuilder(identity: phone).fanOut(
                .text(TextMessage(threadID: "", title: "", body: "x")),
                to: list,
                deviceToken: Self.sixteen
            )
        }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        var options = DeviceSetup.Options(userID: "bob", deviceID: "phone", folder: folder.file("bob"))
        options.push = PushAddress(APNsAddress(topic: "com.example.e2ee", deviceToken: Self.sixteen))
        #expect(throws: SenderError(.badDeviceToken, "")) { try DeviceSetup.createUser(options, nowMs: 1) }
        #expect(!FileManager.default.fileExists(atPath: folder.file("bob/bob.identity")))

        // The APNs client refuses it before sending (nothing listens on port 1: a request that went out would be a
        // connection error).
        let client = APNsClient(
            configuration: try APNsClientConfiguration(
                environment: .custom(baseURL: "https://127.0.0.1:1", trustedCAPEMPath: nil),
                keyID: APNsTestKeys.keyID,
                teamID: APNsTestKeys.teamID,
                signingKey: APNsSigningKey(privateKey: P256.Signing.PrivateKey()),
                connectTimeout: .milliseconds(500)
            ),
            logger: Logger(label: "test")
        )
        let result = await client.send(APNsRequest(deviceToken: Self.sixteen, headers: [:], body: "{}"))
        await client.shutdown()
        #expect(result.localOutcome?.kind == .invalidDeviceToken)
        #expect(result.attempts == 0)

        // The executables: usage errors (64) naming the rule.
        let keygen = try await ChildProcess.run(
            "e2ee-send",
            ["keygen", "--user-id", "bob", "--out-dir", folder.file("cli"), "--device-token", Self.sixteen]
        )
        #expect(keygen.status == 64, "\(keygen.stderr)")
        #expect(keygen.stderr.contains("got only 16 digits"), "\(keygen.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.file("cli/bob.identity")))
        let filter = try await ChildProcess.run(
            "e2ee-filter",
            ["run", "--identity", folder.file("x.identity"), "--contacts", folder.path, "--device-token", Self.sixteen]
        )
        #expect(filter.status == 64, "\(filter.stderr)")
        #expect(filter.stderr.contains("got only 16 digits"), "\(filter.stderr)")
    }
}
