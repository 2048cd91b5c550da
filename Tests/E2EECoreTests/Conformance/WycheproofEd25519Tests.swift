import E2EECore
import Testing

/// Wycheproof `ed25519_test.json` (schema `eddsa_verify_schema_v1.json`) against
/// ``SigningPublicKey/isValidSignature(_:for:)`` (libsodium `crypto_sign_verify_detached`).
@Suite("Wycheproof Ed25519 verify")
struct WycheproofEd25519Tests {
    struct Group: Decodable, Sendable {
        struct PublicKey: Decodable, Sendable {
            let curve: String
            let pk: HexBytes
        }
        let publicKey: PublicKey
        let tests: [Case]
    }

    struct Case: WycheproofCase, Decodable {
        let tcId: Int
        let comment: String
        let flags: [String]
        let msg: HexBytes
        let sig: HexBytes
        let result: WycheproofResult
    }

    /// Cases deliberately not run, by tcId, each with its reason. None.
    static let skipped: [Int: String] = [:]

    @Test("every case: valid signatures verify, invalid ones (malleable, non-canonical, truncated) do not")
    func allCases() throws {
        let file = try VectorFiles.load(WycheproofFile<Group>.self, "wycheproof/ed25519_test.json")
        #expect(file.algorithm == "EDDSA")
        var ran = 0
        var accepted = 0
        for group in file.testGroups {
            #expect(group.publicKey.curve == "edwards25519")
            let key = try SigningPublicKey(rawRepresentation: group.publicKey.pk.bytes)
            for test in group.tests where Self.skipped[test.tcId] == nil {
                ran += 1
                let verified = key.isValidSignature(test.sig.bytes, for: test.msg.bytes)
                switch test.result {
                case .valid:
                    #expect(verified, test.label)
                case .invalid:
                    #expect(!verified, test.label)
                case .acceptable:
                    // The v1 file has none; either outcome would be allowed, so it is only counted.
                    break
                }
                if verified { accepted += 1 }
            }
        }
        #expect(ran == file.numberOfTests - Self.skipped.count)
        #expect(ran == 151)
        #expect(accepted == 88)
    }
}
