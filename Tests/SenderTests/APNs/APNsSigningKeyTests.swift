import Crypto
import Foundation
import Testing

@testable import Sender

@Suite("APNs .p8 signing key loading")
struct APNsSigningKeyTests {
    @Test("a 0600 .p8 file loads and signs with the same key")
    func loadsOwnerOnlyFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("AuthKey_ABC123DEFG.p8")
        let original = try APNsTestKeys.writeKey(to: path, mode: 0o600)
        let loaded = try APNsSigningKey.load(path: path)
        #expect(loaded.publicKey.rawRepresentation == original.publicKey.rawRepresentation)
    }

    @Test(
        "a group- or world-accessible key file is refused with a chmod 600 hint",
        arguments: [0o640, 0o604, 0o644, 0o660, 0o610]
    )
    func refusesOpenPermissions(mode: Int) throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("AuthKey.p8")
        _ = try APNsTestKeys.writeKey(to: path, mode: mode)
        let error = try #require(throws: SenderError.self) { try APNsSigningKey.load(path: path) }
        #expect(error.code == .keyFileTooOpen)
        #expect(error.message.contains("chmod 600 \(path)"))
    }

    @Test("a 0400 key file is accepted")
    func acceptsReadOnlyOwner() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("AuthKey.p8")
        _ = try APNsTestKeys.writeKey(to: path, mode: 0o400)
        _ = try APNsSigningKey.load(path: path)
    }

    @Test("a missing file, a folder and a non-key file are refused with distinct codes")
    func refusesBadFiles() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        #expect(throws: SenderError(.keyFileUnreadable, "")) {
            try APNsSigningKey.load(path: folder.file("missing.p8"))
        }
        #expect(throws: SenderError(.keyFileUnreadable, "")) { try APNsSigningKey.load(path: folder.path) }
        let garbage = folder.file("garbage.p8")
        _ = FileManager.default.createFile(atPath: garbage, contents: Data("-----BEGIN PRIVATE KEY-----\nAAAA\n".utf8))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: garbage)
        #expect(throws: SenderError(.keyInvalid, "")) { try APNsSigningKey.load(path: garbage) }
        // A P-384 key is not an APNs key.
        let p384 = folder.file("p384.p8")
        _ = FileManager.default.createFile(
            atPath: p384,
            contents: Data(P384.Signing.PrivateKey().pemRepresentation.utf8)
        )
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: p384)
        #expect(throws: SenderError(.keyInvalid, "")) { try APNsSigningKey.load(path: p384) }
    }

    @Test("the key path can come from an environment variable naming the file")
    func environmentVariable() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("AuthKey.p8")
        let original = try APNsTestKeys.writeKey(to: path)
        let loaded = try APNsSigningKey.load(environment: ["APNS_KEY_PATH": path])
        #expect(loaded.publicKey.rawRepresentation == original.publicKey.rawRepresentation)
        let custom = try APNsSigningKey.load(fromEnvironmentVariable: "MY_KEY", environment: ["MY_KEY": path])
        #expect(custom.publicKey.rawRepresentation == original.publicKey.rawRepresentation)
        let missing = try #require(throws: SenderError.self) { try APNsSigningKey.load(environment: [:]) }
        #expect(missing.code == .keyEnvironmentVariableMissing)
        #expect(missing.message.contains("APNS_KEY_PATH"))
        #expect(throws: SenderError(.keyEnvironmentVariableMissing, "")) {
            try APNsSigningKey.load(environment: ["APNS_KEY_PATH": ""])
        }
    }

    @Test("errors compare by code only")
    func errorEquality() {
        #expect(SenderError(.keyInvalid, "one") == SenderError(.keyInvalid, "two"))
        #expect(SenderError(.keyInvalid, "same") != SenderError(.keyFileTooOpen, "same"))
    }
}
