import Foundation
import RelayClient
import Testing

@testable import Sender

/// The delivery tokens a batch reads: each file once while it does not change, again as soon as it does.
@Suite("Delivery token cache: one read per unchanged file, every change seen at the next message")
struct DeliveryTokenCacheTests {
    static func folder() throws -> String {
        let folder = NSTemporaryDirectory() + "token-cache-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        return folder
    }

    /// Writes `token` over the file's bytes in place: the same inode and the same size.
    static func overwriteInPlace(_ path: String, with token: DeliveryToken) throws {
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.write(contentsOf: Data((token.hex + "\n").utf8))
        try handle.close()
    }

    @Test("an unchanged file is read once; a rename over it, an edit in place, a chmod, a removal are each seen")
    func changesAreSeen() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/bob.delivery-token"
        var cache = DeliveryTokenFile.Cache(settle: .zero)

        let first = try DeliveryTokenFile.create(path: path)
        #expect(try cache.token(path: path, userID: "bob") == first)
        #expect(try cache.token(path: path, userID: "bob") == first)
        #expect(try cache.token(path: path, userID: "bob") == first)
        #expect(cache.reads == 1)

        // Rotated the way `relay tokens` writes: a new file renamed over the old one.
        let second = try DeliveryTokenFile.create(path: path)
        #expect(second != first)
        #expect(try cache.token(path: path, userID: "bob") == second)
        #expect(try cache.token(path: path, userID: "bob") == second)
        #expect(cache.reads == 2)

        // Edited in place, same size, in a later tick of the file system's clock.
        Thread.sleep(forTimeInterval: 0.05)
        let third = DeliveryToken()
        try Self.overwriteInPlace(path, with: third)
        #expect(try cache.token(path: path, userID: "bob") == third)
        #expect(cache.reads == 3)

        // Made readable by others: refused, not served from memory.
        #expect(chmod(path, 0o644) == 0)
        #expect(throws: SenderError.self) { try cache.token(path: path, userID: "bob") }
        do {
            _ = try cache.token(path: path, userID: "bob")
        } catch {
            #expect(error.code == .insecureKey)
        }
        #expect(chmod(path, 0o600) == 0)
        #expect(try cache.token(path: path, userID: "bob") == third)

        // Removed: the recipient has no token any more.
        try FileManager.default.removeItem(atPath: path)
        do {
            _ = try cache.token(path: path, userID: "bob")
            Issue.record("a removed token file was served from memory")
        } catch {
            #expect(error.code == .missingKey)
        }
    }

    @Test("a file younger than the settle time is read at every message, so an edit in the same clock tick is seen")
    func youngFilesAreReadEachTime() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/bob.delivery-token"
        var cache = DeliveryTokenFile.Cache(settle: .seconds(3600))

        let first = try DeliveryTokenFile.create(path: path)
        #expect(try cache.token(path: path, userID: "bob") == first)
        let second = DeliveryToken()
        try Self.overwriteInPlace(path, with: second)
        #expect(try cache.token(path: path, userID: "bob") == second)
        #expect(try cache.token(path: path, userID: "bob") == second)
        #expect(cache.reads == 3)
    }

    @Test("each file is kept apart: two recipients, two tokens, one read each")
    func filesApart() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var cache = DeliveryTokenFile.Cache(settle: .zero)
        let bob = try DeliveryTokenFile.create(path: folder + "/bob.delivery-token")
        let carol = try DeliveryTokenFile.create(path: folder + "/carol.delivery-token")
        for _ in 0..<3 {
            #expect(try cache.token(path: folder + "/bob.delivery-token", userID: "bob") == bob)
            #expect(try cache.token(path: folder + "/carol.delivery-token", userID: "carol") == carol)
        }
        #expect(cache.reads == 2)
    }
}
