@_spi(Vectors) import E2EECore
import E2EETestVectors
import Foundation
import PushTransport
import Testing

/// Fixtures/e2ee-vectors-xwing.json, sealed by the independent implementation (docs/PROTOCOL.md §13): this side
/// opens every positive to its message and refuses every negative with its code.
@Suite("Project X-Wing vectors (Fixtures/e2ee-vectors-xwing.json)")
struct XWingVectorTests {
    static func fixture() throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: VectorFiles.data("e2ee-vectors-xwing.json")) as? [String: Any]
        )
    }

    let tablet = ProjectVectors.bobTabletXWing()
    let contacts = ProjectVectors.keys().contacts

    func open(_ body: String, nowMs: UInt64 = ProjectVectors.baseTimeMs) throws(E2EEError) -> OpenedPush {
        try PushPayload.open(
            body: Array(body.utf8),
            deviceKey: { self.tablet.deviceKey(for: $0, nowMs: nowMs) },
            signingKey: { self.contacts.signingKey(userID: $0, keyID: $1) }
        )
    }

    @Test("the fixture's keys are bob-v4's tablet: its X-Wing key from the seed, its old X25519 key")
    func keys() throws {
        let keys = try #require(try Self.fixture()["keys"] as? [String: Any])
        let current = self.tablet.currentDeviceKey.privateKey.publicKey
        #expect(keys["recipient_xwing_public_key"] as? String == Hex.encode(current.rawRepresentation))
        #expect(keys["recipient_xwing_key_id"] as? String == current.keyID.hex)
        #expect(keys["recipient_old_key_id"] as? String == self.tablet.deviceKeys[0].keyID.hex)
        let listed = try #require(ProjectVectors.deviceLists().bobV4.device(named: "tablet"))
        #expect(listed.deviceKeys.map(\.publicKey) == self.tablet.publishedDeviceKeys.map(\.publicKey))
    }

    @Test("every positive opens to the message of the classical vector of the same name, in one 4,093-byte body")
    func positives() throws {
        let positives = try #require(try Self.fixture()["positive"] as? [[String: Any]])
        #expect(positives.map { $0["name"] as? String } == ProjectVectors.xwingMessageNames)
        let messages = Dictionary(
            uniqueKeysWithValues: ProjectVectors.messages(sender: ProjectVectors.keys().sender).map {
                ($0.name, $0.message)
            }
        )
        for vector in positives {
            let name = try #require(vector["name"] as? String)
            let body = try #require(vector["body"] as? String)
            let opened = try self.open(body)
            #expect(opened.message == messages[name], "\(name)")
            #expect(opened.bucket == 1844 && body.utf8.count == 4093, "\(name)")
            #expect(opened.recipientKeyID == self.tablet.currentDeviceKey.keyID)
        }
    }

    @Test("every negative fails with its code; the large text is too large to seal to X-Wing")
    func negatives() throws {
        let fixture = try Self.fixture()
        let negatives = try #require(fixture["negative"] as? [[String: Any]])
        #expect(negatives.count == 12)
        for vector in negatives {
            let name = try #require(vector["name"] as? String)
            let expected = try #require(vector["expected_error"] as? String)
            let body = try #require(vector["body"] as? String)
            do throws(E2EEError) {
                _ = try self.open(body)
                Issue.record("\(name) opened, expected \(expected)")
            } catch {
                #expect(error.code.rawValue == expected, "\(name)")
            }
        }
        let large = try #require(
            ProjectVectors.messages(sender: ProjectVectors.keys().sender).first { $0.name == "text-large-bucket" }
        )
        #expect(throws: E2EEError(.tooLarge, "")) {
            try PushPayload.seal(
                large.message,
                to: self.tablet.currentDeviceKey.privateKey.publicKey,
                signingKey: ProjectVectors.keys().sender.signingKey
            )
        }
    }

    @Test("the old X25519 key opens its vector before its expiry, and from then on never")
    func keyLifecycle() throws {
        let section = try #require(try Self.fixture()["key_lifecycle"] as? [String: Any])
        let body = try #require(section["body"] as? String)
        let checks = try #require(section["checks"] as? [[String: Any]])
        #expect(checks.count == 3)
        for check in checks {
            let nowMs = UInt64(try #require(check["now_ms"] as? Int))
            if let expected = check["expected_error"] as? String {
                #expect(throws: E2EEError(E2EEError.Code.unknownRecipientKey, "")) { try self.open(body, nowMs: nowMs) }
                #expect(expected == E2EEError.Code.unknownRecipientKey.rawValue)
            } else {
                #expect(try self.open(body, nowMs: nowMs).recipientKeyID == self.tablet.deviceKeys[0].keyID)
            }
        }
    }
}
