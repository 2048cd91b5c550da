import Testing

@testable import E2EECore

/// Wycheproof `x25519_test.json` (schema `xdh_comp_schema_v1.json`) against ``Primitives/x25519(secret:publicKey:)``.
@Suite("Wycheproof X25519")
struct WycheproofX25519Tests {
    struct Group: Decodable, Sendable {
        let curve: String
        let tests: [Case]
    }

    struct Case: WycheproofCase, Decodable {
        let tcId: Int
        let comment: String
        let flags: [String]
        let publicKey: HexBytes
        let privateKey: HexBytes
        let shared: HexBytes
        let result: WycheproofResult

        enum CodingKeys: String, CodingKey {
            case tcId, comment, flags, shared, result
            case publicKey = "public"
            case privateKey = "private"
        }
    }

    /// Cases deliberately not run, by tcId, each with its reason. None: every case is decided below.
    static let skipped: [Int: String] = [:]

    @Test("every case: byte-exact shared secret, or invalidKey for an all-zero (low-order) result")
    func allCases() throws {
        let file = try VectorFiles.load(WycheproofFile<Group>.self, "wycheproof/x25519_test.json")
        #expect(file.algorithm == "XDH")
        var ran = 0
        var rejectedZero = 0
        for group in file.testGroups {
            #expect(group.curve == "curve25519")
            for test in group.tests where Self.skipped[test.tcId] == nil {
                ran += 1
                let secret = SecureBytes(copying: test.privateKey.bytes)
                let outcome = Result { () throws(E2EEError) in
                    try Primitives.x25519(secret: secret, publicKey: test.publicKey.bytes).bytesForTesting
                }
                if test.shared.bytes.allSatisfy({ $0 == 0 }) {
                    // RFC 9180 7.1.4 / RFC 7748 6.1: an all-zero shared secret must be refused. Wycheproof marks
                    // these "acceptable" (refusing them is allowed); never "valid".
                    #expect(test.result == .acceptable, test.label)
                    #expect(throws: E2EEError(.invalidKey, ""), test.label) { try outcome.get() }
                    rejectedZero += 1
                } else {
                    switch test.result {
                    case .valid, .acceptable:
                        #expect((try? outcome.get()) == test.shared.bytes, test.label)
                    case .invalid:
                        #expect((try? outcome.get()) != test.shared.bytes, test.label)
                    }
                }
            }
        }
        #expect(ran == file.numberOfTests - Self.skipped.count)
        #expect(ran == 518)
        #expect(rejectedZero == 31)
    }
}
