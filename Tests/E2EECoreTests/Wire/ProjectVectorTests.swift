@_spi(Vectors) import E2EECore
import E2EETestVectors
import Foundation
import PushTransport
import Testing

@Suite("Project wire-format vectors (Fixtures/e2ee-vectors.json)")
struct ProjectVectorTests {
    static let fixturePath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/e2ee-vectors.json").path

    static func fixture() throws -> [String: Any] {
        let data = try #require(FileManager.default.contents(atPath: fixturePath), "missing fixture \(fixturePath)")
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// The receiver's contacts of §13: the sender's device list as the fixture states it (`keys.sender_device_list`).
    static func contactsFromFixture() throws -> ContactBook {
        let fixture = try fixture()
        let keys = try #require(fixture["keys"] as? [String: Any])
        let name = try #require(keys["sender_device_list"] as? String)
        let lists = try #require((fixture["device_lists"] as? [String: Any])?["positive"] as? [[String: Any]])
        let vector = try #require(lists.first { $0["name"] as? String == name }, "no device list \(name)")
        return ContactBook([try DeviceList.parse(Array(try #require(vector["json"] as? String).utf8))])
    }

    @Test("the envelope vectors' contacts are alice's signed list: one device, alice/signing-key")
    func contactsComeFromTheSenderList() throws {
        let contacts = try Self.contactsFromFixture()
        let keys = ProjectVectors.keys()
        let alice = try #require(contacts.lists["alice"])
        #expect(alice.devices.map(\.deviceID) == ["phone"])
        #expect(alice == ProjectVectors.deviceList(of: keys.sender))
        let device = try #require(contacts.device(userID: "alice", keyID: keys.sender.signingKey.publicKey.keyID))
        #expect(device.signingKey == keys.sender.signingKey.publicKey)
        #expect(contacts.lists.count == 1)
    }

    @Test("the generator reproduces the fixture byte for byte")
    func generatorMatchesFixture() throws {
        let data = try #require(FileManager.default.contents(atPath: Self.fixturePath), "missing fixture")
        let generated = ProjectVectors.generate()
        #expect(
            Array(data) == generated,
            "code and Fixtures/e2ee-vectors.json disagree: if the wire format changed on purpose, regenerate with `swift run e2ee-vectors > Fixtures/e2ee-vectors.json` and update docs/PROTOCOL.md"
        )
    }

    @Test("every positive vector opens to its message, and small kinds share one body length")
    func positiveVectorsOpen() throws {
        let keys = ProjectVectors.keys()
        let contacts = try Self.contactsFromFixture()
        let positives = try #require(try Self.fixture()["positive"] as? [[String: Any]])
        #expect(positives.count == 7)
        let expected = Dictionary(
            uniqueKeysWithValues: ProjectVectors.messages(sender: keys.sender).map { ($0.name, $0.message) }
        )
        var smallLengths = Set<Int>()
        for vector in positives {
            let name = try #require(vector["name"] as? String)
            let body = Array(try #require(vector["body"] as? String).utf8)
            #expect(body.count == vector["body_length"] as? Int)
            let opened = try PushPayload.open(
                body: body,
                deviceKey: { keys.recipient.deviceKey(for: $0, nowMs: ProjectVectors.baseTimeMs) },
                signingKey: { contacts.signingKey(userID: $0, keyID: $1) }
            )
            #expect(opened.message == expected[name], "vector \(name)")
            if name != "text-large-bucket" { smallLengths.insert(body.count) }
        }
        #expect(smallLengths == [APNsAlertTransport.bodyLength(forBucket: 1536, suite: .classical)])
        #expect(smallLengths == [2233])
    }

    @Test("every negative vector fails with its documented code")
    func negativeVectorsFail() throws {
        let keys = ProjectVectors.keys()
        let contacts = try Self.contactsFromFixture()
        let negatives = try #require(try Self.fixture()["negative"] as? [[String: Any]])
        #expect(negatives.count == 22)
        for vector in negatives {
            let name = try #require(vector["name"] as? String)
            let body = Array(try #require(vector["body"] as? String).utf8)
            let expected = try #require(vector["expected_error"] as? String)
            do {
                _ = try PushPayload.open(
                    body: body,
                    deviceKey: { keys.recipient.deviceKey(for: $0, nowMs: ProjectVectors.baseTimeMs) },
                    signingKey: { contacts.signingKey(userID: $0, keyID: $1) }
                )
                Issue.record("vector \(name) opened but should fail with \(expected)")
            } catch {
                #expect(error.code.rawValue == expected, "vector \(name): got \(error.code), want \(expected)")
            }
        }
    }
}
