@_spi(Vectors) import E2EECore
import Foundation
import Testing

@Suite("Keys, identity files and cards")
struct KeyTests {
    func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "e2ee-keys-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("identity file is written 0600 and reads back the same keys")
    func saveLoad() throws {
        let dir = try temporaryDirectory()
        let path = dir + "/bob.identity"
        var identity = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1000)
        identity.rotate(nowMs: 2000)
        try identity.save(path: path)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let loaded = try Identity.load(path: path)
        #expect(loaded.userID == "bob")
        #expect(loaded.signingKey.publicKey == identity.signingKey.publicKey)
        #expect(loaded.deviceKeys.map(\.keyID) == identity.deviceKeys.map(\.keyID))
        #expect(loaded.deviceKeys.map(\.retiredAtMs) == [2000, nil])
        #expect(loaded.currentDeviceKey.keyID == identity.currentDeviceKey.keyID)
    }

    @Test("loading refuses a group- or world-readable identity file", arguments: [0o640, 0o604, 0o660, 0o644])
    func refusesReadableByOthers(mode: Int) throws {
        let dir = try temporaryDirectory()
        let path = dir + "/id"
        try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1).save(path: path)
        chmod(path, mode_t(mode))
        #expect(throws: E2EEError(.insecureFile, "")) { try Identity.load(path: path) }
    }

    @Test("a locked identity needs its passphrase; a wrong one fails with .locked")
    func locked() throws {
        let dir = try temporaryDirectory()
        let path = dir + "/id"
        let identity = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1)
        try identity.save(path: path, passphrase: SecureBytes(copying: Array("correct horse".utf8)), cost: .minimum)
        #expect(try Identity.isLocked(path: path))
        // The default cost fits the filter's 24 MB budget: opslimit 5, memlimit 8 MiB, stored after the magic.
        try identity.save(path: dir + "/default", passphrase: SecureBytes(copying: Array("x".utf8)))
        let header = try #require(FileManager.default.contents(atPath: dir + "/default")).prefix(25)
        #expect(Array(header[9..<17]) == [0, 0, 0, 0, 0, 0, 0, 5])
        #expect(Array(header[17..<25]) == [0, 0, 0, 0, 0, 0x80, 0, 0])
        #expect(throws: E2EEError(.locked, "")) { try Identity.load(path: path) }
        #expect(throws: E2EEError(.locked, "")) {
            try Identity.load(path: path, passphrase: SecureBytes(copying: Array("wrong".utf8)))
        }
        let loaded = try Identity.load(path: path, passphrase: SecureBytes(copying: Array("correct horse".utf8)))
        #expect(loaded.currentDeviceKey.keyID == identity.currentDeviceKey.keyID)
        // The secret bytes do not appear in the file in clear.
        let file = try #require(FileManager.default.contents(atPath: path))
        let seed = loaded.signingKey.publicKey.rawRepresentation
        #expect(file.range(of: Data(seed)) == nil)
    }

    @Test("secrets print redacted")
    func redacted() throws {
        let identity = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1)
        let secret = SecureBytes(copying: [1, 2, 3, 4])
        #expect("\(secret)" == "<redacted>")
        #expect(String(reflecting: secret).contains("redacted"))
        #expect(!"\(identity)".contains(Hex.encode(identity.signingKey.publicKey.rawRepresentation)))
        #expect("\(identity.signingKey)".contains("<redacted>"))
        #expect("\(identity.currentDeviceKey.privateKey)".contains("<redacted>"))
    }

    @Test("constant-time comparison")
    func constantTime() {
        #expect(SecureBytes(copying: [1, 2, 3]).constantTimeEquals(SecureBytes(copying: [1, 2, 3])))
        #expect(!SecureBytes(copying: [1, 2, 3]).constantTimeEquals(SecureBytes(copying: [1, 2, 4])))
        #expect(!SecureBytes(copying: [1, 2, 3]).constantTimeEquals(SecureBytes(copying: [1, 2])))
        #expect(constantTimeEquals([9, 9], [9, 9]))
        #expect(!constantTimeEquals([9, 9], [9, 8]))
    }

    @Test("card JSON round trips; the current key is the newest; a mismatched key id is refused")
    func card() throws {
        var identity = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1)
        let first = identity.currentDeviceKey.keyID
        identity.rotate(nowMs: 5)
        let card = try identity.card(
            push: PushAddress(APNsAddress(topic: "com.example.app", deviceToken: String(repeating: "ab", count: 32)))
        )
        let parsed = try DeviceList.parse(card.jsonData())
        #expect(parsed == card)
        #expect(parsed.devices[0].currentKey.keyID == identity.currentDeviceKey.keyID)
        #expect(parsed.devices[0].currentKey.keyID != first)
        var json = String(decoding: card.jsonData(), as: UTF8.self)
        json = json.replacingOccurrences(of: "\"key_id\" : \"\(first.hex)\"", with: "\"key_id\" : \"0000000000000000\"")
        #expect(throws: E2EEError(.keyFile, "")) { try DeviceList.parse(Array(json.utf8)) }
    }

    @Test("key ids are derived from public keys as documented")
    func keyIDDerivation() throws {
        let pk = [UInt8](repeating: 7, count: 32)
        // SHA-256("e2ee-push/key-id/v1" || 0x00 || 0x20 || pk)[0..<8], computed independently with Python hashlib.
        #expect(KeyID(deriving: .x25519, publicKey: pk).hex == "ab4d2bdb53c7488d")
        #expect(KeyID(deriving: .ed25519, publicKey: pk).hex == "c655f97adcdb5539")
    }

    @Test("identity generation refuses bad user ids")
    func badUserID() {
        #expect(throws: E2EEError(.invalidArgument, "")) {
            try Identity.generate(userID: "", displayName: "x", nowMs: 1)
        }
        #expect(throws: E2EEError(.invalidArgument, "")) {
            try Identity.generate(userID: String(repeating: "u", count: 65), displayName: "x", nowMs: 1)
        }
    }
}
