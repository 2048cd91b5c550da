import E2EECore
import Foundation
import TestSupport
import Testing

@testable import Sender

/// Creating devices (`e2ee-send keygen`, `device request`), in process through ``DeviceSetup``.
@Suite("DeviceSetup: a user's first device and another device's request")
struct DeviceSetupTests {
    static let token = String(repeating: "A1", count: 32)

    @Test("a first device: a 0600 identity with the user key and a public card, list v1 with its push address")
    func firstDevice() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        var options = DeviceSetup.Options(userID: "bob", deviceID: "phone", folder: folder.file("out/bob"))
        options.displayName = "Bob B."
        options.push = PushAddress(APNsAddress(topic: "com.example.app", deviceToken: Self.token))
        let created = try DeviceSetup.createUser(options, nowMs: 1_800_000_000_000)
        #expect(created.identityPath == folder.file("out/bob/bob.identity"))
        #expect(created.publicPath == folder.file("out/bob/bob.card.json"))
        #expect(try Self.mode(created.identityPath) == 0o600)
        #expect(try Self.mode(created.publicPath) == 0o644)
        let identity = try Identity.load(path: created.identityPath)
        #expect(identity.userSigningKey != nil)
        #expect(identity.displayName == "Bob B.")
        let card = try DeviceList.load(path: created.publicPath)
        #expect(card == created.list)
        #expect(card.listVersion == 1)
        #expect(card.issuedAtMs == 1_800_000_000_000)
        // The token is published in lowercase, the form it is compared and sent in.
        #expect(
            card.devices.map(\.push) == [
                PushAddress(APNsAddress(topic: "com.example.app", deviceToken: Self.token.lowercased()))
            ]
        )

        // Again: refused without force (the keys are kept), replaced with it.
        let again = try #require(throws: SenderError.self) { try DeviceSetup.createUser(options, nowMs: 1) }
        #expect(again.code == .usage)
        #expect(again.message.contains("pass --force"))
        #expect(try Identity.load(path: created.identityPath).signingKey.publicKey == identity.signingKey.publicKey)
        options.force = true
        let replaced = try DeviceSetup.createUser(options, nowMs: 2)
        #expect(replaced.identity.signingKey.publicKey != identity.signingKey.publicKey)
    }

    @Test("another device: an identity without the user key and a request the managing device signs in")
    func anotherDevice() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let phone = try DeviceSetup.createUser(
            DeviceSetup.Options(userID: "bob", deviceID: "phone", folder: folder.file("phone")),
            nowMs: 10
        )
        var options = DeviceSetup.Options(userID: "bob", deviceID: "tablet", folder: folder.file("tablet"))
        options.push = PushAddress(
            APNsAddress(topic: "com.example.e2ee", deviceToken: String(repeating: "b2", count: 32))
        )
        let created = try DeviceSetup.createDevice(options, nowMs: 20)
        #expect(created.publicPath == folder.file("tablet/bob.tablet.request.json"))
        #expect(created.list == nil)
        #expect(try Identity.load(path: created.identityPath).userSigningKey == nil)
        let request = try DeviceRequest.parse(Array(try Data(contentsOf: URL(fileURLWithPath: created.publicPath))))
        let list = try DeviceManagement.add(request, to: #require(phone.list), signer: phone.identity, nowMs: 30)
        #expect(list.devices.map(\.deviceID) == ["phone", "tablet"])
    }

    @Test("a passphrase file locks the identity; a passphrase file readable by others is refused, nothing written")
    func passphrase() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let file = folder.file("pass")
        _ = FileManager.default.createFile(
            atPath: file,
            contents: Data("secret\n".utf8),
            attributes: [.posixPermissions: 0o600]
        )
        var options = DeviceSetup.Options(userID: "bob", deviceID: "phone", folder: folder.file("bob"))
        options.passphraseFile = file
        let created = try DeviceSetup.createUser(options, nowMs: 1)
        #expect(try Identity.isLocked(path: created.identityPath))

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        options.folder = folder.file("other")
        let refused = try #require(throws: SenderError.self) { try DeviceSetup.createUser(options, nowMs: 1) }
        #expect(refused.code == .insecureKey)
        #expect(!FileManager.default.fileExists(atPath: folder.file("other/bob.identity")))
    }

    static func mode(_ path: String) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
    }
}
