import Testing

@testable import E2EECore

/// Wycheproof `chacha20_poly1305_test.json` (schema `aead_test_schema_v1.json`) against
/// ``Primitives/chachaSeal(key:nonce:aad:plaintext:)`` and ``Primitives/chachaOpen(key:nonce:aad:ciphertext:)``.
@Suite("Wycheproof ChaCha20-Poly1305")
struct WycheproofChaChaPolyTests {
    struct Group: Decodable, Sendable {
        let ivSize: Int
        let keySize: Int
        let tagSize: Int
        let tests: [Case]
    }

    struct Case: WycheproofCase, Decodable {
        let tcId: Int
        let comment: String
        let flags: [String]
        let key: HexBytes
        let iv: HexBytes
        let aad: HexBytes
        let msg: HexBytes
        let ct: HexBytes
        let tag: HexBytes
        let result: WycheproofResult
    }

    /// Cases deliberately not run, by tcId, each with its reason. None: other IV sizes are run and must be refused.
    static let skipped: [Int: String] = [:]

    @Test("every case: 96-bit IVs seal and open byte-exactly or are rejected; other IV sizes are refused")
    func allCases() throws {
        let file = try VectorFiles.load(WycheproofFile<Group>.self, "wycheproof/chacha20_poly1305_test.json")
        #expect(file.algorithm == "CHACHA20-POLY1305")
        var ran = 0
        var refusedIVSize = 0
        for group in file.testGroups {
            #expect(group.keySize == 256 && group.tagSize == 128)
            for test in group.tests where Self.skipped[test.tcId] == nil {
                ran += 1
                let key = SecureBytes(copying: test.key.bytes)
                let sealed = Result { () throws(E2EEError) in
                    try test.msg.bytes.withBytes { (p: UnsafeRawBufferPointer) throws(E2EEError) in
                        try Primitives.chachaSeal(key: key, nonce: test.iv.bytes, aad: test.aad.bytes, plaintext: p)
                    }
                }
                let opened = Result { () throws(E2EEError) in
                    try Primitives.chachaOpen(
                        key: key,
                        nonce: test.iv.bytes,
                        aad: test.aad.bytes,
                        ciphertext: test.ct.bytes + test.tag.bytes
                    ).bytesForTesting
                }
                guard group.ivSize == 96 else {
                    // Only the IETF 96-bit nonce is ours: any other size is refused before any C call.
                    #expect(test.result == .invalid, test.label)
                    #expect(throws: E2EEError(.invalidArgument, ""), test.label) { try sealed.get() }
                    #expect(throws: E2EEError(.openFailed, ""), test.label) { try opened.get() }
                    refusedIVSize += 1
                    continue
                }
                switch test.result {
                case .valid, .acceptable:
                    #expect((try? sealed.get()) == test.ct.bytes + test.tag.bytes, test.label)
                    #expect((try? opened.get()) == test.msg.bytes, test.label)
                case .invalid:
                    #expect((try? sealed.get()) != test.ct.bytes + test.tag.bytes, test.label)
                    #expect(throws: E2EEError(.openFailed, ""), test.label) { try opened.get() }
                }
            }
        }
        #expect(ran == file.numberOfTests - Self.skipped.count)
        #expect(ran == 325)
        #expect(refusedIVSize == 9)
    }
}
