@_spi(Vectors) import E2EECore
import Foundation
import Locking
import Logging
import PushTransport
import TestSupport

@testable import NotificationFilter

/// Keys, a temporary state file, an engine with a recording event sink, and helpers to seal payloads.
struct EngineHarness {
    static let start: Int64 = 1_800_000_000_000
    let directory: String
    let bob: Identity  // recipient, rotated once (an older key in its grace period), to `bobSuite`
    let alice: Identity  // a contact
    let carol: Identity  // another contact
    let mallory: Identity  // not a contact
    let clock: TestClock
    let events: InMemoryCallEventSink
    let reporter: CallKitReporter
    let engine: FilterEngine
    let store: FilterStateStore

    init(
        policy: FilterPolicy = FilterPolicy(),
        bobLocked: Bool = false,
        bobSuite: CryptoSuite = .classical,
        extraAccounts: [FilterAccount] = [],
        provider: CallProviderConfiguration = CallProviderConfiguration(),
        logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws {
        self.directory = NSTemporaryDirectory() + "e2ee-engine-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        var bob = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: UInt64(Self.start - 86_400_000))
        bob.rotate(nowMs: UInt64(Self.start - 3_600_000), suite: bobSuite)
        self.bob = bob
        self.alice = try Identity.generate(userID: "alice", displayName: "Alice Example", nowMs: 1)
        self.carol = try Identity.generate(userID: "carol", displayName: "Carol Example", nowMs: 1)
        self.mallory = try Identity.generate(userID: "mallory", displayName: "Mallory", nowMs: 1)
        self.clock = TestClock(ms: Self.start)
        self.events = InMemoryCallEventSink()
        self.store = try FilterStateStore(path: self.directory + "/state.sqlite", logger: logger)
        self.reporter = CallKitReporter(
            configuration: provider,
            sink: self.events,
            clock: self.clock.wallClock,
            logger: logger
        )
        let bobAccount =
            bobLocked
            ? FilterAccount(
                lockedName: "bob",
                deviceKeyIDs: Set(bob.deviceKeys.map(\.keyID)),
                contacts: ContactBook([try self.alice.card(), try self.carol.card()])
            )
            : FilterAccount(identity: bob, contacts: ContactBook([try self.alice.card(), try self.carol.card()]))
        self.engine = try FilterEngine(
            store: self.store,
            accounts: [bobAccount] + extraAccounts,
            policy: policy,
            reporter: self.reporter,
            clock: self.clock.wallClock,
            logger: logger
        )
    }

    /// Another engine over `store` (this harness's by default) and the same accounts and clock, whose calls are
    /// reported to `sink` (an ``EventOutbox`` as the daemon wires it, or a recording sink).
    func engine(
        store: FilterStateStore? = nil,
        sink: any CallEventSink,
        logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> FilterEngine {
        try FilterEngine(
            store: store ?? self.store,
            accounts: await self.engine.accounts,
            reporter: CallKitReporter(configuration: .init(), sink: sink, clock: self.clock.wallClock, logger: logger),
            clock: self.clock.wallClock,
            logger: logger
        )
    }

    /// A new engine over the same state and accounts, as after a process restart, with its restart recovery done.
    func restartedEngine(
        reporter: any CallReporting,
        logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> FilterEngine {
        let engine = try FilterEngine(
            store: self.store,
            accounts: await self.engine.accounts,
            reporter: reporter,
            clock: self.clock.wallClock,
            logger: logger
        )
        try await engine.recoverAfterRestart()
        return engine
    }

    /// Seals `content` from `from` (alice by default) to bob's current key (or `to`).
    func body(
        _ content: MessageContent,
        from: Identity? = nil,
        to key: DevicePublicKey? = nil,
        sentAtMs: Int64? = nil,
        messageID: MessageID = .random()
    ) throws -> [UInt8] {
        let sender = from ?? self.alice
        let message = InnerMessage(
            messageID: messageID,
            sentAtMs: UInt64(sentAtMs ?? self.clock.nowMs),
            senderUserID: sender.userID,
            senderSigningKeyID: sender.signingKey.publicKey.keyID,
            content: content
        )
        return try PushPayload.seal(
            message,
            to: key ?? self.bob.currentDeviceKey.privateKey.publicKey,
            signingKey: sender.signingKey
        ).apnsBody
    }

    static func invite(_ callID: UUID, timeout: UInt16 = 30, video: Bool = false) -> MessageContent {
        .callInvite(
            CallInvite(
                callID: callID,
                callerHandle: "alice",
                displayName: "Alice Example",
                hasVideo: video,
                ringTimeoutSeconds: timeout
            )
        )
    }

    private static let counter = PThreadMutex<Int64>(1_000_000)  // above any seq a test passes by hand

    /// Decides one body and returns its decision.
    func decide(_ body: [UInt8]) async throws -> FilterDecision {
        let seq = Self.counter.withLock {
            $0 += 1
            return $0
        }
        let outcome = try await self.engine.process([PayloadInput(seq: seq, apnsID: "id-\(seq)", body: body)])
        guard let decision = outcome.decisions.first, outcome.decisions.count == 1 else {
            throw FilterError("expected one decision, got \(outcome.decisions.count)")
        }
        return decision
    }

    func decide(line: String) async throws -> FilterDecision {
        let seq = Self.counter.withLock {
            $0 += 1
            return $0
        }
        let outcome = try await self.engine.process([PayloadInput.parse(line: Array(line.utf8), defaultSeq: seq)])
        return outcome.decisions[0]
    }

    func eventKinds() -> [String] { self.events.events.map(\.event.rawValue) }
}
