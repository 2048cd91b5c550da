import E2EECore
import Foundation
import Locking
import Logging
import PushTransport
import TestSupport

@testable import NotificationFilter

/// Two users with several devices: bob (phone, tablet) and alice (phone, laptop), each user's devices signed into
/// one device list; carol is a one-device contact of both.
struct MultiDeviceUsers {
    static let start = EngineHarness.start
    let bobPhone: Identity
    let bobTablet: Identity
    let alicePhone: Identity
    let aliceLaptop: Identity
    let carol: Identity
    let bobList: DeviceList
    let aliceList: DeviceList
    let carolList: DeviceList

    init() throws {
        let created = UInt64(Self.start - 86_400_000)
        self.bobPhone = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: created)
        self.bobTablet = try Identity.generate(
            userID: "bob",
            displayName: "Bob",
            deviceID: "tablet",
            withUserKey: false,
            nowMs: created
        )
        self.alicePhone = try Identity.generate(
            userID: "alice",
            displayName: "Alice Example",
            deviceID: "phone",
            nowMs: created
        )
        self.aliceLaptop = try Identity.generate(
            userID: "alice",
            displayName: "Alice Example",
            deviceID: "laptop",
            withUserKey: false,
            nowMs: created
        )
        self.carol = try Identity.generate(userID: "carol", displayName: "Carol Example", nowMs: created)
        self.bobList = try Self.list(self.bobPhone, [self.bobTablet])
        self.aliceList = try Self.list(self.alicePhone, [self.aliceLaptop])
        self.carolList = try self.carol.card(nowMs: created)
    }

    /// `first`'s list with `others` signed in by it.
    static func list(_ first: Identity, _ others: [Identity]) throws -> DeviceList {
        var list = try DeviceList.create(for: first, push: nil, nowMs: UInt64(Self.start - 80_000_000))
        for other in others {
            list = try list.signingIn(
                try DeviceRequest.make(for: other, push: nil, nowMs: UInt64(Self.start - 80_000_000)),
                signer: first,
                nowMs: UInt64(Self.start - 80_000_000)
            )
        }
        return list
    }

    /// The APNs body of `content` sent by `from` to `to`'s current key.
    func body(
        _ content: MessageContent,
        from: Identity,
        to: Identity,
        sentAtMs: Int64,
        messageID: MessageID = .random()
    ) throws -> [UInt8] {
        let message = InnerMessage(
            messageID: messageID,
            sentAtMs: UInt64(sentAtMs),
            senderUserID: from.userID,
            senderSigningKeyID: from.signingKey.publicKey.keyID,
            content: content
        )
        return try PushPayload.seal(message, to: to.currentDeviceKey.privateKey.publicKey, signingKey: from.signingKey)
            .apnsBody
    }

    static func invite(_ callID: UUID) -> MessageContent {
        .callInvite(
            CallInvite(
                callID: callID,
                callerHandle: "alice",
                displayName: "Alice Example",
                hasVideo: false,
                ringTimeoutSeconds: 30
            )
        )
    }

    static func cancel(_ callID: UUID, _ reason: CallCancelReason) -> MessageContent {
        .callCancel(CallCancel(callID: callID, reason: reason))
    }
}

/// One device's filter: its engine on its own state file, call events through the durable outbox (as in `run`)
/// and recorded in memory as they are first emitted.
struct DeviceFilter {
    let identity: Identity
    let store: FilterStateStore
    let events: InMemoryCallEventSink
    let reporter: CallKitReporter
    let engine: FilterEngine
    let clock: TestClock

    /// - Parameters:
    ///   - statePath: the state file; a second filter on the same path is the same device after a restart.
    init(
        _ identity: Identity,
        ownList: DeviceList,
        contacts: [DeviceList],
        statePath: String,
        clock: TestClock
    ) throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        self.identity = identity
        self.clock = clock
        self.store = try FilterStateStore(path: statePath, logger: logger)
        self.events = InMemoryCallEventSink()
        let outbox = try EventOutbox(store: self.store, eventsPath: nil, forward: self.events, logger: logger)
        self.reporter = CallKitReporter(
            configuration: CallProviderConfiguration(),
            sink: outbox,
            clock: clock.wallClock,
            logger: logger
        )
        self.engine = try FilterEngine(
            store: self.store,
            accounts: [FilterAccount(identity: identity, contacts: ContactBook(contacts), ownList: ownList)],
            reporter: self.reporter,
            clock: clock.wallClock,
            logger: logger
        )
    }

    static func temporaryStatePath() throws -> String {
        let directory = NSTemporaryDirectory() + "e2ee-devices-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory + "/state.sqlite"
    }

    private static let counter = PThreadMutex<Int64>(0)

    func decide(_ body: [UInt8]) async throws -> FilterDecision {
        let seq = Self.counter.withLock {
            $0 += 1
            return $0
        }
        let outcome = try await self.engine.process([PayloadInput(seq: seq, apnsID: nil, body: body)])
        guard outcome.decisions.count == 1 else {
            throw FilterError("expected one decision, got \(outcome.decisions.count)")
        }
        return outcome.decisions[0]
    }

    var eventKinds: [String] { self.events.events.map(\.event.rawValue) }

    func missedCalls() throws -> [MissedCallRecord] {
        try self.store.transaction { tx in try tx.missedCalls() }
    }

    func callState(_ callID: UUID) throws -> CallStateRecord? {
        let name = self.identity.userID
        return try self.store.transaction { tx in try tx.callState(account: name, callID: callID) }
    }
}
