import E2EECore
import Foundation
import Locking
import Logging
import TestSupport
import Testing

@testable import NotificationFilter

/// Locked accounts: a wrong or insecure passphrase file is reported once and tried again only when it changes,
/// and the payloads kept while locked are decided before any newer one.
@Suite("Locked accounts")
struct LockedAccountTests {
    /// A locked identity file for `identity` and a passphrase file beside it.
    private static func lockedFiles(_ identity: Identity, passphrase: String) throws -> (String, String) {
        let directory = NSTemporaryDirectory() + "e2ee-locked-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let identityPath = directory + "/bob.identity"
        try identity.save(
            path: identityPath,
            passphrase: SecureBytes(copying: Array(passphrase.utf8)),
            cost: .minimum
        )
        return (identityPath, directory + "/bob.passphrase")
    }

    private static func writePassphrase(_ path: String, _ text: String, mode: UInt32 = 0o600) throws {
        try SecretFile.write(path: path, bytes: SecureBytes(copying: Array((text + "\n").utf8)))
        #expect(chmod(path, mode_t(mode)) == 0)
    }

    @Test("a wrong passphrase file is tried once, reported once, and tried again only when it changes")
    func wrongPassphraseTriedOncePerVersion() throws {
        let bob = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1)
        let secret = "correct horse battery staple"
        let wrong = "wrong-passphrase-probe"
        let (identityPath, passphrasePath) = try Self.lockedFiles(bob, passphrase: secret)
        let records = LogCapture(label: "fp-test")
        let unlocker = PassphraseUnlocker(
            accounts: ["bob": .init(identity: identityPath, passphraseFile: passphrasePath)],
            logger: records.logger
        )

        // No file yet: no attempt, one notice.
        for _ in 0..<5 { #expect(unlocker.unlock("bob") == nil) }
        #expect(unlocker.attempts == 0)

        try Self.writePassphrase(passphrasePath, wrong)
        for _ in 0..<10 { #expect(unlocker.unlock("bob") == nil) }
        #expect(unlocker.attempts == 1, "Argon2id runs once per version of the file, not per tick")
        let errors = records.lines.filter { $0.hasPrefix("error") }
        #expect(errors.count == 1)
        #expect(errors.first?.contains(passphrasePath) == true, "the report names the file")
        #expect(errors.first?.contains("wrong passphrase") == true, "the report says what is wrong")

        // Readable by others: refused, reported once more, not retried while unchanged.
        try Self.writePassphrase(passphrasePath, secret, mode: 0o644)
        for _ in 0..<10 { #expect(unlocker.unlock("bob") == nil) }
        #expect(unlocker.attempts == 2)
        #expect(records.lines.filter { $0.hasPrefix("error") }.count == 2)
        #expect(records.lines.last { $0.hasPrefix("error") }?.contains("chmod 600") == true)

        // The right passphrase, private: unlocked on the next try.
        try Self.writePassphrase(passphrasePath, secret)
        let identity = unlocker.unlock("bob")
        #expect(identity?.userID == "bob")
        #expect(unlocker.attempts == 3)
        #expect(records.lines.filter { $0.hasPrefix("notice") }.count == 1, "a missing file is reported once")
        // Never a passphrase in the log.
        #expect(!records.lines.contains { $0.contains(secret) || $0.contains(wrong) })
    }

    @Test("after unlock, payloads kept while locked are decided first, in order, before any newer one")
    func keptPayloadsFirst() async throws {
        let locked = try EngineHarness(bobLocked: true)
        let bodies = try (0..<4).map { i in
            try locked.body(.text(TextMessage(threadID: "", title: "", body: "m\(i)")))
        }
        let kept = try await locked.engine.process([
            PayloadInput(seq: 1, apnsID: nil, body: bodies[0]), PayloadInput(seq: 2, apnsID: nil, body: bodies[1]),
        ])
        #expect(kept.keptWhileLocked == 2)

        // The same state, now with the identity (a restart after the passphrase file appeared, or the window
        // between unlock and draining): a newer payload waits behind the kept ones.
        let engine = try FilterEngine(
            store: locked.store,
            accounts: [FilterAccount(identity: locked.bob, contacts: ContactBook([try locked.alice.card()]))],
            reporter: locked.reporter,
            clock: locked.clock.wallClock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        #expect(await engine.hasKeptPayloads)
        let newer = try await engine.process([PayloadInput(seq: 3, apnsID: nil, body: bodies[2])])
        #expect(newer.decisions.isEmpty, "a newer payload is not decided before the kept ones")
        #expect(newer.keptWhileLocked == 1)
        #expect(!newer.showLockedAlert, "not locked: no locked alert")

        let emitted = EmittedLines()
        let decided = try await engine.decideKept(emit: { emitted.append($0) })
        #expect(decided.map(\.seq) == [1, 2, 3])
        #expect(decided.map(\.alert?.body) == ["m0", "m1", "m2"])
        #expect(emitted.count == 3)
        #expect(await !engine.hasKeptPayloads)
        let after = try await engine.process([PayloadInput(seq: 4, apnsID: nil, body: bodies[3])])
        #expect(after.decisions.map(\.seq) == [4])
        #expect(try locked.store.transaction { tx in try tx.pendingCount() } == 0)
    }

    @Test("e2ee-filter once, unlocked, on a state with payloads a locked run kept: decides its own payload")
    func onceAfterKept() async throws {
        let fixture = try FilterFixture()
        let state = fixture.path("state.sqlite")
        do {
            // A locked run kept one payload in this state file.
            let noLogs = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            let store = try FilterStateStore(path: state, logger: noLogs)
            let engine = try FilterEngine(
                store: store,
                accounts: [
                    FilterAccount(
                        lockedName: "bob",
                        deviceKeyIDs: Set(fixture.bob.deviceKeys.map(\.keyID)),
                        contacts: ContactBook([try fixture.alice.card()])
                    )
                ],
                reporter: CallKitReporter(
                    configuration: CallProviderConfiguration(),
                    sink: InMemoryCallEventSink(),
                    clock: .fixed(fixture.startMs),
                    logger: noLogs
                ),
                clock: .fixed(fixture.startMs),
                logger: noLogs
            )
            let kept = try await engine.process([
                PayloadInput(seq: 1, apnsID: nil, body: try fixture.body(FilterFixture.text("kept")))
            ])
            #expect(kept.keptWhileLocked == 1)
        }
        let payload = fixture.path("new.json")
        try appendToFile(payload, try fixture.body(FilterFixture.text("newer")))
        let once = try await FilterProcess.run(
            ["once"] + fixture.accountArguments(state: state) + ["--payload", payload],
            directory: fixture.directory,
            name: "once-after-kept"
        )
        #expect(once.status == 0, "stderr: \(once.stderr)")
        let lines = JSONLines.split(once.stdout).lines
        #expect(lines.count == 1)
        #expect(JSONLines.object(lines.first ?? "")?["decision"] as? String == "alert", "not kept behind: \(lines)")
        #expect(JSONLines.object(lines.first ?? "")?["reason"] as? String == "text")
    }
}

private final class EmittedLines: Sendable {
    private let lines = PThreadMutex<[String]>([])
    func append(_ more: [String]) { self.lines.withLock { $0 += more } }
    var count: Int { self.lines.withLock { $0.count } }
}
