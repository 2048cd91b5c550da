import Crypto
import E2EETestVectors
import Foundation
import PushTransport
import Testing

@testable @_spi(Vectors) import E2EECore

/// The X-Wing suite (docs/PROTOCOL.md §16): the draft's vectors, sealing and opening every kind in its one bucket,
/// its capacity, and the downgrades a device that moved to X-Wing refuses.
@Suite("X-Wing suite")
struct XWingSuiteTests {
    struct DraftVector: Decodable {
        let seed: HexBytes
        let eseed: HexBytes
        let ss: HexBytes
        let sk: HexBytes
        let pk: HexBytes
        let ct: HexBytes
    }

    static let t0 = ProjectVectors.baseTimeMs
    let alice = ProjectVectors.keys().sender
    let tablet = ProjectVectors.bobTabletXWing()
    var contacts: ContactBook { ProjectVectors.keys().contacts }

    func message(_ content: MessageContent, userID: String? = nil) -> InnerMessage {
        InnerMessage(
            messageID: .random(),
            sentAtMs: Self.t0,
            senderUserID: userID ?? self.alice.userID,
            senderSigningKeyID: self.alice.signingKey.publicKey.keyID,
            content: content
        )
    }

    func open(_ body: [UInt8], nowMs: UInt64 = Self.t0) throws(E2EEError) -> OpenedPush {
        try PushPayload.open(
            body: body,
            deviceKey: { self.tablet.deviceKey(for: $0, nowMs: nowMs) },
            signingKey: { self.contacts.signingKey(userID: $0, keyID: $1) }
        )
    }

    @Test("the draft's vectors: our key from each seed has the draft's public key, and decapsulates its ciphertext")
    func draftVectors() throws {
        let vectors = try VectorFiles.load([DraftVector].self, "xwing/xwing-draft06-vectors.json")
        #expect(vectors.count == 3)
        for (index, vector) in vectors.enumerated() {
            #expect(vector.sk == vector.seed, "vector \(index): the draft's secret key is its seed")
            let key = try DevicePrivateKey(suite: .xwing, secret: SecureBytes(copying: vector.seed.bytes))
            #expect(key.publicKey.rawRepresentation == vector.pk.bytes, "vector \(index): public key")
            let library = try XWingMLKEM768X25519.PrivateKey(seedRepresentation: vector.seed.bytes, publicKey: nil)
            #expect(Array(library.publicKey.rawRepresentation) == vector.pk.bytes)
            let secret = try library.decapsulate(Data(vector.ct.bytes))
            #expect(secret.withUnsafeBytes { Array($0) } == vector.ss.bytes, "vector \(index): shared secret")
        }
    }

    @Test("the suite's numbers: ids, Nenc 1,120, a 1,216-byte key, key id alg 0x7A, a 1,131-byte header")
    func suiteValue() throws {
        let suite = CryptoSuite.xwing
        #expect((suite.id, suite.kemID, suite.kdfID, suite.aeadID) == (0x0002, 0x647a, 0x0001, 0x0002))
        #expect((suite.encapsulatedKeyLength, suite.publicKeyLength, suite.secretKeyLength) == (1120, 1216, 32))
        #expect(suite.headerLength == 1131)
        #expect(CryptoSuite.withID(2) == .xwing && CryptoSuite.named("xwing") == .xwing)
        #expect(CryptoSuite.withID(3) == nil)
        let key = self.tablet.currentDeviceKey.privateKey.publicKey
        #expect(key.keyID == KeyID(deriving: 0x7A, publicKey: key.rawRepresentation))
        #expect(key.keyID != KeyID(deriving: 0x20, publicKey: key.rawRepresentation))
        #expect(APNsAlertTransport.padding.buckets(for: .xwing) == [1844])
        #expect(APNsAlertTransport.bodyLength(forBucket: 1844, suite: .xwing) == 4093)
    }

    @Test("every kind seals to one X-Wing body of 4,093 bytes and opens to its message", arguments: 0..<4)
    func everyKind(kindIndex: Int) throws {
        let contents: [MessageContent] = [
            .callInvite(
                CallInvite(
                    callID: UUID(),
                    callerHandle: "alice",
                    displayName: "Alice",
                    hasVideo: false,
                    ringTimeoutSeconds: 30
                )
            ),
            .callCancel(CallCancel(callID: UUID(), reason: .remoteEnded)),
            .text(TextMessage(threadID: "t", title: "hi", body: "hello")),
            .receipt(Receipt(messageIDs: [.random()])),
        ]
        let message = self.message(contents[kindIndex])
        let sealed = try PushPayload.seal(
            message,
            to: self.tablet.currentDeviceKey.privateKey.publicKey,
            signingKey: self.alice.signingKey
        )
        #expect(sealed.envelope.suite == .xwing)
        #expect(sealed.envelope.encapsulatedKey.count == 1120)
        #expect(sealed.bucket == 1844)
        #expect(sealed.apnsBody.count == 4093)
        let opened = try self.open(sealed.apnsBody)
        #expect(opened.message == message)
        #expect(opened.bucket == 1844)
    }

    @Test("capacity (PROTOCOL §16.3): the longest text and the most receipt ids fit, one byte or id more is too large")
    func capacity() throws {
        let key = self.tablet.currentDeviceKey.privateKey.publicKey
        // user id 5 bytes ("alice"): text bytes (thread id + title + body) at most 1,734; receipts at most 108 ids.
        // user id 64 bytes: 1,675 and 104.
        for (userID, longestText, mostIDs) in [("alice", 1734, 108), (String(repeating: "u", count: 64), 1675, 104)] {
            func seal(_ content: MessageContent) throws(E2EEError) -> SealedPush {
                try PushPayload.seal(self.message(content, userID: userID), to: key, signingKey: self.alice.signingKey)
            }
            func text(_ n: Int) -> MessageContent {
                .text(TextMessage(threadID: "t", title: "x", body: String(repeating: "a", count: n - 2)))
            }
            func receipt(_ n: Int) -> MessageContent {
                .receipt(Receipt(messageIDs: (0..<n).map { _ in MessageID.random() }))
            }
            #expect(try seal(text(longestText)).apnsBody.count == 4093)
            #expect(throws: E2EEError(.tooLarge, "")) { try seal(text(longestText + 1)) }
            #expect(try seal(receipt(mostIDs)).apnsBody.count == 4093)
            #expect(throws: E2EEError(.tooLarge, "")) { try seal(receipt(mostIDs + 1)) }
        }
    }

    @Test("downgrades: a classical envelope naming the X-Wing key, an X-Wing one relabelled classical, the old key")
    func downgrades() throws {
        let old = self.tablet.deviceKeys[0]
        let current = self.tablet.currentDeviceKey
        #expect(old.privateKey.suite == .classical && current.privateKey.suite == .xwing)
        let text = self.message(.text(TextMessage(threadID: "t", title: "x", body: "y")))
        // The old X25519 key opens what was sealed to it until its grace ends, then never.
        let toOld = try PushPayload.seal(text, to: old.privateKey.publicKey, signingKey: self.alice.signingKey)
        let expires = try #require(old.expiresAtMs)
        #expect(try self.open(toOld.apnsBody, nowMs: expires - 1).message == text)
        #expect(throws: E2EEError(.unknownRecipientKey, "")) { try self.open(toOld.apnsBody, nowMs: expires) }
        // A classical envelope that names the X-Wing key's id: no classical key has that id.
        let relabelled = try PushPayload.sealUnchecked(
            text,
            to: old.privateKey.publicKey,
            recipientKeyID: current.keyID,
            signingKey: self.alice.signingKey,
            padding: APNsAlertTransport.padding
        )
        #expect(throws: E2EEError(.unknownRecipientKey, "")) { try self.open(relabelled.apnsBody) }
        // An X-Wing envelope whose suite says classical: it parses as a classical large-bucket envelope (2,991 bytes
        // = 43 + 2,932 + 16) naming the X-Wing key, which is no classical key.
        let sealed = try PushPayload.seal(text, to: current.privateKey.publicKey, signingKey: self.alice.signingKey)
        var bytes = sealed.envelope.serialized
        bytes[2] = 0x01
        let body = APNsAlertTransport.body(for: try Envelope(parsing: bytes, padding: APNsAlertTransport.padding))
        #expect(throws: E2EEError(.unknownRecipientKey, "")) { try self.open(body) }
    }

    @Test("the identity file keeps each key's suite (version 3) and still reads version 2")
    func identityFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("xwing-id-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let mixed = folder + "/mixed.identity"
        try self.tablet.save(path: mixed)
        let bytes = try #require(FileManager.default.contents(atPath: mixed))
        #expect(Array(bytes.prefix(8)) == Array("E2EEID".utf8) + [0x00, 0x03])
        let loaded = try Identity.load(path: mixed)
        #expect(loaded.deviceKeys.map(\.privateKey.suite) == [.classical, .xwing])
        #expect(loaded.deviceKeys.map(\.keyID) == self.tablet.deviceKeys.map(\.keyID))
        let classical = folder + "/classical.identity"
        try ProjectVectors.bobTablet().save(path: classical)
        let classicalBytes = try #require(FileManager.default.contents(atPath: classical))
        #expect(Array(classicalBytes.prefix(8)) == Array("E2EEID".utf8) + [0x00, 0x02])
        #expect(try Identity.load(path: classical).currentDeviceKey.privateKey.suite == .classical)
    }

    @Test("rotate --suite: the new key is X-Wing, the old classical key keeps its grace")
    func rotationToXWing() throws {
        var identity = try Identity.generate(userID: "carol", displayName: "Carol", nowMs: Self.t0)
        #expect(identity.currentDeviceKey.privateKey.suite == .classical)
        let old = identity.currentDeviceKey.keyID
        identity.rotate(nowMs: Self.t0 + 10, suite: .xwing)
        #expect(identity.currentDeviceKey.privateKey.suite == .xwing)
        #expect(identity.deviceKey(for: old, nowMs: Self.t0 + 11)?.suite == .classical)
        identity.rotate(nowMs: Self.t0 + 20)
        #expect(identity.currentDeviceKey.privateKey.suite == .xwing, "a rotation keeps the current suite")
        let xwingFirst = try Identity.generate(userID: "dave", displayName: "Dave", suite: .xwing, nowMs: Self.t0)
        #expect(xwingFirst.currentDeviceKey.privateKey.suite == .xwing)
        #expect(try xwingFirst.card().formatVersion == 3)
    }
}
