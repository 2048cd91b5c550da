import E2EECore
import Foundation
import Logging
import TestSupport
import Testing

@testable import NotificationFilter

/// How an account finds its own device list (`--card`, or the contacts folder) and, while locked, its device.
@Suite("Own device list of an account")
struct OwnListLoadingTests {
    let users: MultiDeviceUsers
    let directory: String
    let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    init() throws {
        self.users = try MultiDeviceUsers()
        self.directory = NSTemporaryDirectory() + "e2ee-ownlist-\(UUID().uuidString)"
        try FileManager.default.createDirectory(
            atPath: self.directory + "/contacts",
            withIntermediateDirectories: true
        )
        try SecretFile.writePublic(
            path: self.directory + "/contacts/alice.card.json",
            bytes: self.users.aliceList.jsonData()
        )
        try SecretFile.writePublic(path: self.directory + "/bob.list.json", bytes: self.users.bobList.jsonData())
        try SecretFile.writePublic(path: self.directory + "/alice.list.json", bytes: self.users.aliceList.jsonData())
        // bob's list before the tablet was signed in.
        try SecretFile.writePublic(
            path: self.directory + "/bob-v1.list.json",
            bytes: try MultiDeviceUsers.list(self.users.bobPhone, []).jsonData()
        )
        try self.users.bobPhone.save(path: self.directory + "/phone.identity")
        try self.users.bobTablet.save(path: self.directory + "/tablet.identity")
        try self.users.bobTablet.save(
            path: self.directory + "/tablet-locked.identity",
            passphrase: SecureBytes(copying: Array("tablet passphrase".utf8)),
            cost: .minimum
        )
    }

    func options(_ identity: String, card: String?, deviceID: String? = nil) -> FilterAppOptions.Account {
        FilterAppOptions.Account(
            identity: self.directory + "/" + identity,
            contacts: self.directory + "/contacts",
            card: card.map { self.directory + "/" + $0 },
            deviceID: deviceID
        )
    }

    func refusal(_ options: FilterAppOptions.Account) -> String? {
        do {
            _ = try FilterApp.loadAccount(options, logger: self.logger)
            return nil
        } catch let error as FilterError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test("--card: the own list becomes a contact; this device's signing key is known")
    func cardIsAContact() throws {
        let account = try FilterApp.loadAccount(
            self.options("tablet.identity", card: "bob.list.json"),
            logger: self.logger
        )
        #expect(account.userID == "bob")
        #expect(account.ownSigningKeyID == self.users.bobTablet.signingKey.publicKey.keyID)
        #expect(
            account.contacts.device(userID: "bob", keyID: self.users.bobPhone.signingKey.publicKey.keyID)?.deviceID
                == "phone"
        )
        #expect(account.contacts.lists["alice"] != nil)
    }

    @Test("no --card: the contacts folder's list of the user is the own list, if it lists this device")
    func ownListFromContacts() throws {
        let without = try FilterApp.loadAccount(self.options("tablet.identity", card: nil), logger: self.logger)
        #expect(without.contacts.lists["bob"] == nil)
        try SecretFile.writePublic(
            path: self.directory + "/contacts/bob.card.json",
            bytes: self.users.bobList.jsonData()
        )
        let with = try FilterApp.loadAccount(self.options("tablet.identity", card: nil), logger: self.logger)
        #expect(with.contacts.lists["bob"]?.listVersion == self.users.bobList.listVersion)
    }

    @Test("a --card of another user, or one that does not list this device, is refused saying what to do")
    func wrongCards() {
        #expect(
            self.refusal(self.options("tablet.identity", card: "alice.list.json"))?.contains("alice's device list")
                == true
        )
        let stale = self.refusal(self.options("tablet.identity", card: "bob-v1.list.json"))
        #expect(stale?.contains("does not list this device tablet") == true, "\(stale ?? "accepted")")
        #expect(stale?.contains("sign this device in") == true)
        let mismatch = self.refusal(self.options("phone.identity", card: "bob.list.json", deviceID: "tablet"))
        #expect(mismatch?.contains("--device-id tablet does not match") == true)
    }

    @Test("locked: --device-id picks this device's key ids from the own list; several devices need it")
    func lockedDevice() throws {
        let ambiguous = self.refusal(self.options("tablet-locked.identity", card: "bob.list.json"))
        #expect(ambiguous?.contains("pass --device-id") == true, "\(ambiguous ?? "accepted")")
        #expect(
            self.refusal(self.options("tablet-locked.identity", card: "bob.list.json", deviceID: "watch"))?.contains(
                "no such device"
            ) == true
        )
        let account = try FilterApp.loadAccount(
            self.options("tablet-locked.identity", card: "bob.list.json", deviceID: "tablet"),
            logger: self.logger
        )
        #expect(account.isLocked)
        #expect(account.name == "bob")
        #expect(account.deviceKeyIDs == Set(self.users.bobTablet.deviceKeys.map(\.keyID)))
        #expect(account.ownSigningKeyID == self.users.bobTablet.signingKey.publicKey.keyID)
    }

    @Test("a contacts card holding another user's list is refused (user-id-mismatch): bob.card.json is bob's")
    func cardOfAnotherUserRefused() throws {
        let folder = self.directory + "/swapped"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try SecretFile.writePublic(path: folder + "/alice.card.json", bytes: self.users.aliceList.jsonData())
        // carol's valid, self-signed list where bob's card belongs.
        try SecretFile.writePublic(path: folder + "/bob.card.json", bytes: self.users.carolList.jsonData())
        let logs = LogCapture()
        let book = try FilterApp.loadContacts(folder: folder, logger: logs.logger)
        #expect(Set(book.lists.keys) == ["alice"])
        #expect(logs.text.contains("holds carol's device list, not bob's"), "\(logs.text)")
    }
}
