import Foundation
import Logging
import TestSupport
import Testing

@testable import Sender

@Suite("APNs inactive token registry")
struct TokenRegistryTests {
    let tokenA = String(repeating: "ab", count: 32)
    let tokenB = String(repeating: "cd", count: 32)

    @Test("a token marked inactive is reported with its timestamp until reactivated")
    func markAndReactivate() async {
        let registry = TokenRegistry()
        #expect(await !registry.isInactive(self.tokenA))
        await registry.markInactive(self.tokenA, timestamp: 1_700_000_000_123)
        #expect(await registry.isInactive(self.tokenA))
        #expect(await registry.isInactive(self.tokenA.uppercased()))
        #expect(await registry.entry(for: self.tokenA)?.timestamp == 1_700_000_000_123)
        #expect(await !registry.isInactive(self.tokenB))
        // An older timestamp does not replace a newer one; a newer one does.
        await registry.markInactive(self.tokenA, timestamp: 1_600_000_000_000)
        #expect(await registry.entry(for: self.tokenA)?.timestamp == 1_700_000_000_123)
        await registry.markInactive(self.tokenA, timestamp: 1_800_000_000_000)
        #expect(await registry.entry(for: self.tokenA)?.timestamp == 1_800_000_000_000)
        await registry.reactivate(self.tokenA)
        #expect(await !registry.isInactive(self.tokenA))
        #expect(await registry.inactiveEntries.isEmpty)
    }

    @Test("the registry persists to a 0600 JSON file and reloads it")
    func persistence() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("inactive-tokens.json")
        let registry = try TokenRegistry(persistingTo: path, logger: Logger(label: "test"))
        #expect(!FileManager.default.fileExists(atPath: path))
        await registry.markInactive(self.tokenA, timestamp: 42)
        await registry.markInactive(self.tokenB, timestamp: nil)
        #expect(await registry.lastPersistenceError == nil)
        let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        )
        #expect(json["version"] as? Int == 1)
        #expect((json["inactive"] as? [Any])?.count == 2)

        let reloaded = try TokenRegistry(persistingTo: path, logger: Logger(label: "test"))
        #expect(await reloaded.entry(for: self.tokenA)?.timestamp == 42)
        #expect(await reloaded.isInactive(self.tokenB))
        await reloaded.reactivate(self.tokenB)
        let again = try TokenRegistry(persistingTo: path, logger: Logger(label: "test"))
        #expect(await again.inactiveEntries.map(\.deviceToken) == [self.tokenA])
        // No temporary files are left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["inactive-tokens.json"])
    }

    @Test("a corrupt or world-readable registry file is refused")
    func refusesBadFiles() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let corrupt = folder.file("corrupt.json")
        _ = FileManager.default.createFile(
            atPath: corrupt,
            contents: Data("not json".utf8),
            attributes: [.posixPermissions: 0o600]
        )
        #expect(throws: SenderError(.registryFileUnreadable, "")) {
            _ = try TokenRegistry(persistingTo: corrupt, logger: Logger(label: "test"))
        }
        let open = folder.file("open.json")
        _ = FileManager.default.createFile(atPath: open, contents: Data(#"{"version":1,"inactive":[]}"#.utf8))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: open)
        #expect(throws: SenderError(.registryFileUnreadable, "")) {
            _ = try TokenRegistry(persistingTo: open, logger: Logger(label: "test"))
        }
    }

    @Test("a write failure is remembered and logged, and the in-memory state still refuses the token")
    func writeFailure() async throws {
        let logs = LogCapture()
        let registry = try TokenRegistry(
            persistingTo: "/nonexistent-folder-\(UUID().uuidString)/r.json",
            logger: logs.logger
        )
        await registry.markInactive(self.tokenA, timestamp: 7)
        #expect(await registry.lastPersistenceError?.code == .registryFileUnwritable)
        #expect(await registry.isInactive(self.tokenA))
        #expect(logs.text.contains("token registry not saved"))
        #expect(!logs.text.contains(self.tokenA))
    }
}
