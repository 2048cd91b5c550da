import Testing

@testable import E2EECore

/// Wycheproof `hmac_sha256_test.json` (schema `mac_test_schema_v1.json`) against
/// ``Primitives/hmacSHA256(key:message:)``, comparing the first `tagSize` bits.
@Suite("Wycheproof HMAC-SHA256")
struct WycheproofHMACTests {
    struct Group: Decodable, Sendable {
        let keySize: Int
        let tagSize: Int
        let tests: [Case]
    }

    struct Case: WycheproofCase, Decodable {
        let tcId: Int
        let comment: String
        let flags: [String]
        let key: HexBytes
        let msg: HexBytes
        let tag: HexBytes
        let result: WycheproofResult
    }

    /// Cases deliberately not run, by tcId, each with its reason. None.
    static let skipped: [Int: String] = [:]

    @Test("every case: the tag prefix of tagSize bits matches for valid cases and differs for invalid ones")
    func allCases() throws {
        let file = try VectorFiles.load(WycheproofFile<Group>.self, "wycheproof/hmac_sha256_test.json")
        #expect(file.algorithm == "HMACSHA256")
        var ran = 0
        var matched = 0
        for group in file.testGroups {
            #expect(group.tagSize % 8 == 0 && group.tagSize <= 256)
            for test in group.tests where Self.skipped[test.tcId] == nil {
                ran += 1
                #expect(test.key.count * 8 == group.keySize, test.label)
                #expect(test.tag.count * 8 == group.tagSize, test.label)
                let mac = test.key.bytes.withUnsafeBytes { Primitives.hmacSHA256(key: $0, message: test.msg.bytes) }
                let prefix = Array(mac.bytesForTesting.prefix(group.tagSize / 8))
                switch test.result {
                case .valid, .acceptable:
                    #expect(prefix == test.tag.bytes, test.label)
                case .invalid:
                    #expect(prefix != test.tag.bytes, test.label)
                }
                if prefix == test.tag.bytes { matched += 1 }
            }
        }
        #expect(ran == file.numberOfTests - Self.skipped.count)
        #expect(ran == 174)
        #expect(matched == 66)
    }
}
