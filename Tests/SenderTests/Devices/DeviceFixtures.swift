import E2EECore
import Foundation
import Testing

@testable import Sender

/// Bob with a phone (holding the user key) and a tablet signed in, alice with one device, and a folder of cards.
struct Devices {
    static let phoneToken = String(repeating: "a1", count: 32)
    static let tabletToken = String(repeating: "b2", count: 32)
    static let topic = "com.example.app"
    static let now: UInt64 = 1_800_000_000_000

    var alice: Identity
    var phone: Identity
    var tablet: Identity
    /// bob's list v1 (phone only) and v2 (phone and tablet).
    var v1: DeviceList
    var v2: DeviceList
    let folder: String

    init() throws {
        self.alice = try Identity.generate(userID: "alice", displayName: "Alice", nowMs: 1)
        self.phone = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: 1)
        self.tablet = try Identity.generate(
            userID: "bob",
            displayName: "Bob",
            deviceID: "tablet",
            withUserKey: false,
            nowMs: 1
        )
        self.v1 = try DeviceList.create(
            for: self.phone,
            push: PushAddress(APNsAddress(topic: Self.topic, deviceToken: Self.phoneToken)),
            nowMs: 10
        )
        let request = try DeviceRequest.make(
            for: self.tablet,
            push: PushAddress(APNsAddress(topic: Self.topic, deviceToken: Self.tabletToken)),
            nowMs: 20
        )
        self.v2 = try DeviceManagement.add(request, to: self.v1, signer: self.phone, nowMs: 30)
        self.folder = NSTemporaryDirectory() + "devices-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: self.folder, withIntermediateDirectories: true)
        try self.publish(self.v2)
        try self.publish(
            try self.alice.card(
                push: PushAddress(APNsAddress(topic: "t", deviceToken: String(repeating: "cc", count: 32)))
            )
        )
    }

    /// Writes `list` as `<folder>/<user>.card.json`, where a sender looks for it.
    func publish(_ list: DeviceList) throws {
        try Data(list.jsonData()).write(to: URL(fileURLWithPath: self.folder + "/\(list.userID).card.json"))
    }

    /// A trust with its pins file in the folder, collecting notices.
    func trust(notices: Notices = Notices()) throws -> ContactTrust {
        try ContactTrust(
            directory: ContactDirectory(folder: self.folder),
            pinsPath: self.folder + "/pins.json",
            clock: .fixed(Int64(Self.now)),
            notice: { notices.append($0) }
        )
    }

    /// Opens a request body with `identity`'s device keys; the sender's keys come from `senders`.
    static func open(_ request: APNsRequest, with identity: Identity, senders: [DeviceList]) throws -> OpenedPush {
        let book = ContactBook(senders)
        return try PushPayload.open(
            body: request.bodyBytes,
            deviceKey: { identity.deviceKey(for: $0, nowMs: 2) },
            signingKey: { book.signingKey(userID: $0, keyID: $1) }
        )
    }
}

/// Messages for people, collected across a `@Sendable` closure.
final class Notices: @unchecked Sendable {
    // Proof: every access holds `lock`.
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ text: String) { self.lock.withLock { self.stored.append(text) } }
    var all: [String] { self.lock.withLock { self.stored } }
}

extension BuiltPush {
    /// The APNs request: every push these tests build is one (``APNsFormat``). A push of another service records an
    /// issue and reads as an empty request, so the test fails instead of the process.
    var request: APNsRequest {
        guard let request = self.apnsRequest else {
            Issue.record("expected an APNs request, got \(type(of: self.push))")
            return APNsRequest(deviceToken: "", headers: [:], body: "")
        }
        return request
    }
}
