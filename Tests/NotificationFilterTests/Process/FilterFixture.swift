import E2EECore
import Foundation
import NotificationFilter
import PushTransport
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A temporary folder with bob's identity file (0600), a contacts folder holding alice's card, and helpers that
/// seal payloads and write them as gateway spool records or request lines.
///
/// Bob is the device the filter serves; alice is a contact; mallory is not.
final class FilterFixture: Sendable {
    let directory: String
    let bob: Identity
    let alice: Identity
    let mallory: Identity
    /// The time the payloads are built around (real time: the daemon runs on its own clock).
    let startMs: Int64

    var identityPath: String { self.directory + "/bob.identity" }
    var contactsPath: String { self.directory + "/contacts" }

    init() throws {
        var template = Array("/tmp/e2ee-fp-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw ProcessTestError("mkdtemp failed: errno \(errno)")
        }
        self.directory = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        self.startMs = Int64(Date().timeIntervalSince1970 * 1000)
        self.bob = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: UInt64(self.startMs - 86_400_000))
        self.alice = try Identity.generate(userID: "alice", displayName: "Alice Example", nowMs: 1)
        self.mallory = try Identity.generate(userID: "mallory", displayName: "Mallory", nowMs: 1)
        try self.bob.save(path: self.identityPath)
        try FileManager.default.createDirectory(atPath: self.contactsPath, withIntermediateDirectories: true)
        try SecretFile.writePublic(
            path: self.contactsPath + "/alice.card.json",
            bytes: try self.alice.card().jsonData()
        )
    }

    deinit {
        try? FileManager.default.removeItem(atPath: self.directory)
    }

    func path(_ name: String) -> String { self.directory + "/" + name }

    /// Options of `e2ee-filter run --spool <spool> --exit-at-end` as bob, over `state` (default state.sqlite), with
    /// decisions in `decisions` (default decisions.jsonl).
    func spoolRunOptions(
        _ spool: String,
        state: String? = nil,
        decisions: String? = nil
    ) -> FilterAppOptions {
        var options = FilterAppOptions(
            accounts: [.init(identity: self.identityPath, contacts: self.contactsPath)],
            statePath: state ?? self.path("state.sqlite")
        )
        options.input = .spool(path: spool)
        options.exitAtEndOfInput = true
        options.decisionsPath = decisions ?? self.path("decisions.jsonl")
        return options
    }

    /// Writes `identity`'s card into the contacts folder with its device key id swapped for `other`'s: a card whose
    /// key id does not match its key, which the filter must refuse. Returns the card's path.
    @discardableResult
    func writeTamperedCard(of identity: Identity, keyIDFrom other: Identity) throws -> String {
        var card = try #require(
            try JSONSerialization.jsonObject(with: Data(try identity.card().jsonData())) as? [String: Any]
        )
        var devices = try #require(card["devices"] as? [[String: Any]])
        var keys = try #require(devices[0]["device_keys"] as? [[String: Any]])
        let otherCard = try JSONSerialization.jsonObject(with: Data(try other.card().jsonData())) as? [String: Any]
        let otherDevices = try #require(otherCard?["devices"] as? [[String: Any]])
        let otherKeys = try #require(otherDevices[0]["device_keys"] as? [[String: Any]])
        keys[0]["key_id"] = otherKeys[0]["key_id"]
        devices[0]["device_keys"] = keys
        card["devices"] = devices
        let path = self.contactsPath + "/\(identity.userID).card.json"
        let bytes = try JSONSerialization.data(withJSONObject: card, options: [.sortedKeys])
        try SecretFile.writePublic(path: path, bytes: Array(bytes))
        return path
    }

    /// The account flags every `e2ee-filter` invocation gets.
    func accountArguments(state: String) -> [String] {
        ["--identity", self.identityPath, "--contacts", self.contactsPath, "--state", state]
    }

    /// Seals `content` from alice (or `from`) to bob's current device key; returns the APNs body.
    func body(
        _ content: MessageContent,
        from: Identity? = nil,
        sentAtMs: Int64? = nil,
        messageID: MessageID = .random()
    ) throws -> [UInt8] {
        let sender = from ?? self.alice
        let message = InnerMessage(
            messageID: messageID,
            sentAtMs: UInt64(sentAtMs ?? self.startMs),
            senderUserID: sender.userID,
            senderSigningKeyID: sender.signingKey.publicKey.keyID,
            content: content
        )
        return try PushPayload.seal(
            message,
            to: self.bob.currentDeviceKey.privateKey.publicKey,
            signingKey: sender.signingKey
        )
        .apnsBody
    }

    static func invite(
        _ callID: UUID,
        timeout: UInt16 = 3_600,
        name: String = "Alice Example",
        handle: String = "alice"
    )
        -> MessageContent
    {
        .callInvite(
            CallInvite(
                callID: callID,
                callerHandle: handle,
                displayName: name,
                hasVideo: false,
                ringTimeoutSeconds: timeout
            )
        )
    }

    static func cancel(_ callID: UUID, _ reason: CallCancelReason) -> MessageContent {
        .callCancel(CallCancel(callID: callID, reason: reason))
    }

    static func text(_ body: String, title: String = "") -> MessageContent {
        .text(TextMessage(threadID: "", title: title, body: body))
    }
}

/// A gateway spool record (`APNsGateway.DeliveryRecord`'s line format, written here without depending on it).
struct SpoolRecord: Encodable {
    var apnsID: String
    var body: String
    var deviceToken = String(repeating: "ab", count: 32)
    var headers = [
        "apns-expiration": "0", "apns-priority": "10", "apns-push-type": "alert", "apns-topic": "com.example.app",
    ]
    var receivedAtMs: Int64
    var seq: Int64

    enum CodingKeys: String, CodingKey {
        case apnsID = "apns_id"
        case body
        case deviceToken = "device_token"
        case headers
        case receivedAtMs = "received_at_ms"
        case seq
    }

    init(seq: Int64, body: [UInt8], receivedAtMs: Int64) {
        self.seq = seq
        self.apnsID = UUID().uuidString
        self.body = String(decoding: body, as: UTF8.self)
        self.receivedAtMs = receivedAtMs
    }

    func jsonLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try! encoder.encode(self), as: UTF8.self)
    }
}

/// Appends bytes to a file with `write(2)` (whole chunks, as the gateway's spool writer appends whole lines).
func appendToFile(_ path: String, _ bytes: [UInt8]) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw ProcessTestError("cannot open \(path): errno \(errno)") }
    defer { close(fd) }
    var offset = 0
    while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { throw ProcessTestError("cannot write \(path): errno \(errno)") }
        offset += n
    }
}
