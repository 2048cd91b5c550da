@_spi(Vectors) import E2EECore
import Foundation
import Testing

/// Identity file v2 (docs/PROTOCOL.md §12) and the key lifecycle of §11.1: device id, optional user key,
/// per-key expiry, rotation and revocation.
@Suite("Identity v2: file, rotation, expiry")
struct IdentityV2Tests {
    static let t0: UInt64 = 1_790_000_000_000

    func temporaryPath(_ name: String) throws -> String {
        let dir = NSTemporaryDirectory() + "e2ee-identity-v2-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir + "/" + name
    }

    func expectSame(_ a: Identity, _ b: Identity) {
        #expect(a.userID == b.userID)
        #expect(a.displayName == b.displayName)
        #expect(a.deviceID == b.deviceID)
        #expect(a.signingKey.publicKey == b.signingKey.publicKey)
        #expect(a.userSigningKey?.publicKey == b.userSigningKey?.publicKey)
        #expect(a.deviceKeys.map(\.keyID) == b.deviceKeys.map(\.keyID))
        #expect(a.deviceKeys.map(\.createdAtMs) == b.deviceKeys.map(\.createdAtMs))
        #expect(a.deviceKeys.map(\.retiredAtMs) == b.deviceKeys.map(\.retiredAtMs))
        #expect(a.deviceKeys.map(\.expiresAtMs) == b.deviceKeys.map(\.expiresAtMs))
    }

    @Test("a v2 file round trips plain: magic version 2, device id, user key, retired key with its expiry")
    func plainRoundTrip() throws {
        let path = try temporaryPath("bob.identity")
        var identity = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: Self.t0)
        identity.rotate(nowMs: Self.t0 + 1000, gracePeriodMs: 60_000)
        try identity.save(path: path)
        let file = try #require(FileManager.default.contents(atPath: path))
        #expect(Array(file.prefix(9)) == Array("E2EEID".utf8) + [0x00, 0x02, 0x00])
        let loaded = try Identity.load(path: path)
        expectSame(loaded, identity)
        #expect(loaded.userSigningKey != nil)
        #expect(loaded.deviceKeys.map(\.expiresAtMs) == [Self.t0 + 61_000, nil])
        // body = user_id str8 "bob" || display_name str8 "Bob" || device_id str8 "phone" || ...
        #expect(Array(file[9..<23]) == [3] + Array("bob".utf8) + [3] + Array("Bob".utf8) + [5] + Array("phone".utf8))
    }

    @Test("a device without the user key round trips, locked with a passphrase")
    func lockedRoundTrip() throws {
        let path = try temporaryPath("tablet.identity")
        let identity = try Identity.generate(
            userID: "bob",
            displayName: "Bob",
            deviceID: "tablet",
            withUserKey: false,
            nowMs: Self.t0
        )
        let passphrase = SecureBytes(copying: Array("correct horse battery".utf8))
        try identity.save(path: path, passphrase: passphrase, cost: .minimum)
        #expect(try Identity.isLocked(path: path))
        let file = try #require(FileManager.default.contents(atPath: path))
        #expect(Array(file.prefix(9)) == Array("E2EEID".utf8) + [0x00, 0x02, 0x01])
        #expect(throws: E2EEError(.locked, "")) { try Identity.load(path: path) }
        let loaded = try Identity.load(path: path, passphrase: passphrase)
        expectSame(loaded, identity)
        #expect(loaded.userSigningKey == nil)
        #expect(file.range(of: Data("tablet".utf8)) == nil)
    }

    @Test("a version-1 identity file is refused, saying to create a new identity")
    func version1Refused() throws {
        let path = try temporaryPath("old.identity")
        var bytes = Array("E2EEID".utf8) + [0x00, 0x01, 0x00]
        bytes += [3] + Array("bob".utf8) + [3] + Array("Bob".utf8) + [UInt8](repeating: 7, count: 32) + [1]
        bytes += [UInt8](repeating: 9, count: 32) + [UInt8](repeating: 0, count: 16)
        #expect(
            FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
        )
        do {
            _ = try Identity.load(path: path)
            Issue.record("a version-1 identity file was loaded")
        } catch {
            #expect(error.code == .keyFile)
            #expect(error.message.contains("earlier release"), "\(error.message)")
            #expect(error.message.contains("create a new identity"), "\(error.message)")
        }
    }

    @Test("rotate with grace 0 revokes the old key at once: deviceKey(for:) is nil at the same instant")
    func graceZeroRevokes() throws {
        var identity = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: Self.t0)
        let old = identity.currentDeviceKey.keyID
        #expect(identity.deviceKey(for: old, nowMs: Self.t0 + 5) != nil)
        identity.rotate(nowMs: Self.t0 + 5, gracePeriodMs: 0)
        #expect(identity.deviceKey(for: old, nowMs: Self.t0 + 5) == nil)
        #expect(identity.deviceKey(for: old, nowMs: Self.t0) == nil)
        #expect(identity.deviceKeys.map(\.keyID) == [identity.currentDeviceKey.keyID])
        #expect(identity.deviceKey(for: identity.currentDeviceKey.keyID, nowMs: Self.t0 + 5) != nil)
        // The next published list no longer carries the revoked key.
        let list = try identity.card(nowMs: Self.t0 + 5)
        #expect(!list.devices[0].deviceKeys.contains { $0.keyID == old })
    }

    @Test("rotate with a grace period: the old key opens until, not at, retired + grace")
    func graceWindow() throws {
        var identity = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: Self.t0)
        let old = identity.currentDeviceKey.keyID
        identity.rotate(nowMs: Self.t0 + 10)
        let expires = Self.t0 + 10 + Identity.defaultGracePeriodMs
        #expect(identity.deviceKeys[0].retiredAtMs == Self.t0 + 10)
        #expect(identity.deviceKeys[0].expiresAtMs == expires)
        #expect(identity.deviceKey(for: old, nowMs: expires - 1) != nil)
        #expect(identity.deviceKey(for: old, nowMs: expires) == nil)
        #expect(identity.deviceKey(for: old, nowMs: expires + 1) == nil)
    }

    @Test("rotation drops expired keys and keeps at most 16, the current one last")
    func rotationBounds() throws {
        var identity = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: Self.t0)
        identity.rotate(nowMs: Self.t0 + 100, gracePeriodMs: 10)
        #expect(identity.deviceKeys.count == 2)
        identity.rotate(nowMs: Self.t0 + 200, gracePeriodMs: 1_000_000)
        // The first key expired at t0 + 110: gone; the second is retired with its grace, the third is current.
        #expect(identity.deviceKeys.count == 2)
        #expect(identity.deviceKeys[0].retiredAtMs == Self.t0 + 200)
        var created: [KeyID] = identity.deviceKeys.map(\.keyID)
        for n in 1...20 {
            created.append(identity.rotate(nowMs: Self.t0 + 300 + UInt64(n), gracePeriodMs: 1_000_000).keyID)
        }
        #expect(identity.deviceKeys.count == 16)
        #expect(identity.deviceKeys.map(\.keyID) == Array(created.suffix(16)))
        #expect(identity.deviceKeys.last?.retiredAtMs == nil)
        #expect(identity.deviceKeys.dropLast().allSatisfy { $0.retiredAtMs != nil && $0.expiresAtMs != nil })
        // Such an identity still publishes a well-formed list.
        #expect(try DeviceList.parse(identity.card(nowMs: Self.t0 + 400).jsonData()).devices[0].deviceKeys.count == 16)
    }

    @Test("a grace period past 2^53 - 1 ms is capped there, so the list stays publishable")
    func graceCapped() throws {
        var identity = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: Self.t0)
        identity.rotate(nowMs: Self.t0 + 1, gracePeriodMs: UInt64.max)
        #expect(identity.deviceKeys[0].expiresAtMs == DeviceList.maximumInteger)
        #expect(try DeviceList.parse(identity.card(nowMs: Self.t0 + 2).jsonData()).devices[0].deviceKeys.count == 2)
    }
}
