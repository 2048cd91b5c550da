import Testing

@testable import E2EECore

/// Wycheproof `hkdf_sha256_test.json` (schema `hkdf_test_schema_v1.json`) against
/// ``Primitives/hkdfExtract(salt:ikm:)`` followed by ``Primitives/hkdfExpand(prk:info:length:)``.
@Suite("Wycheproof HKDF-SHA256")
struct WycheproofHKDFTests {
    struct Group: Decodable, Sendable {
        let keySize: Int
        let tests: [Case]
    }

    struct Case: WycheproofCase, Decodable {
        let tcId: Int
        let comment: String
        let flags: [String]
        let ikm: HexBytes
        let salt: HexBytes
        let info: HexBytes
        let size: Int
        let okm: HexBytes
        let result: WycheproofResult
    }

    /// Cases deliberately not run, by tcId, each with its reason. None.
    static let skipped: [Int: String] = [:]

    @Test("every case: Extract + Expand give okm byte-exactly; sizes above 255 * 32 throw invalidArgument")
    func allCases() throws {
        let file = try VectorFiles.load(WycheproofFile<Group>.self, "wycheproof/hkdf_sha256_test.json")
        #expect(file.algorithm == "HKDF-SHA-256")
        var ran = 0
        var refusedSize = 0
        for group in file.testGroups {
            for test in group.tests where Self.skipped[test.tcId] == nil {
                ran += 1
                let prk = Primitives.hkdfExtract(salt: test.salt.bytes, ikm: [test.ikm.bytes])
                let okm = Result { () throws(E2EEError) in
                    try Primitives.hkdfExpand(prk: prk, info: test.info.bytes, length: test.size).bytesForTesting
                }
                if test.size > 255 * 32 {
                    #expect(test.result == .invalid, test.label)
                    #expect(throws: E2EEError(.invalidArgument, ""), test.label) { try okm.get() }
                    refusedSize += 1
                    continue
                }
                switch test.result {
                case .valid, .acceptable:
                    #expect((try? okm.get()) == test.okm.bytes, test.label)
                case .invalid:
                    #expect((try? okm.get()) != test.okm.bytes, test.label)
                }
            }
        }
        #expect(ran == file.numberOfTests - Self.skipped.count)
        #expect(ran == 86)
        #expect(refusedSize == 3)
    }
}
