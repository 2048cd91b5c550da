import Dispatch
// libFuzzer target: the filter's whole decode path — an input line (request line, spool record or bare APNs body)
// → JSON → envelope → HPKE → inner message → signature → replay/clock/call rules → exactly one decision.
// Seeds: the bodies in Fixtures/e2ee-vectors.json and e2ee-vectors-xwing.json (scripts/fuzz-corpus.py), sealed to
// the keys built below from the same seed labels (bob's classical phone, bob's X-Wing tablet), so mutations of real
// payloads of both suites reach every stage.
@_spi(Vectors) import E2EECore
import Logging
import NotificationFilter
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

func seed(_ label: String) -> [UInt8] {
    let utf8 = Array("e2ee-vectors/\(label)".utf8)
    return (0..<32).map { i in utf8[i % utf8.count] ^ UInt8(i) }
}

/// The engine, built once per process, with bob's phone (keys as in the vectors: the older key retired an hour
/// before the vectors' base time with the default 7-day grace) and alice's signed device list as the contact.
let engine: FilterEngine = {
    let hourBefore: UInt64 = 1_789_996_400_000
    let bob = try! Identity(
        userID: "bob",
        displayName: "Bob",
        deviceID: "phone",
        signingKey: SigningPrivateKey(seed: SecureBytes(copying: seed("bob/signing-key"))),
        userSigningKey: SigningPrivateKey(seed: SecureBytes(copying: seed("bob/user-key"))),
        deviceKeys: [
            (
                key: try! DevicePrivateKey(suite: .classical, secret: SecureBytes(copying: seed("bob/device-key-old"))),
                createdAtMs: 1_789_913_600_000, retiredAtMs: hourBefore,
                expiresAtMs: hourBefore + Identity.defaultGracePeriodMs
            ),
            (
                key: try! DevicePrivateKey(suite: .classical, secret: SecureBytes(copying: seed("bob/device-key"))),
                createdAtMs: hourBefore, retiredAtMs: nil, expiresAtMs: nil
            ),
        ]
    )
    let alice = try! Identity(
        userID: "alice",
        displayName: "Alice Example",
        deviceID: "phone",
        signingKey: SigningPrivateKey(seed: SecureBytes(copying: seed("alice/signing-key"))),
        userSigningKey: SigningPrivateKey(seed: SecureBytes(copying: seed("alice/user-key"))),
        deviceKeys: [
            (
                key: try! DevicePrivateKey(suite: .classical, secret: SecureBytes(copying: seed("alice/device-key"))),
                createdAtMs: hourBefore, retiredAtMs: nil, expiresAtMs: nil
            )
        ]
    )
    let logger = Logger(label: "fuzz") { _ in SwiftLogNoOpLogHandler() }
    let path = "/dev/shm/e2ee-fuzz-\(getpid()).sqlite"
    let store = try! FilterStateStore(path: path, logger: logger)
    let reporter = CallKitReporter(
        configuration: .init(),
        sink: InMemoryCallEventSink(),
        clock: .fixed(1_790_000_001_000),
        logger: logger
    )
    // Bob's tablet after its move to X-Wing (as in the vectors' list bob-v4): its X25519 key in grace, its X-Wing
    // key current.
    let movedAt: UInt64 = 1_789_999_700_000
    let tablet = try! Identity(
        userID: "bob",
        displayName: "Bob",
        deviceID: "tablet",
        signingKey: SigningPrivateKey(seed: SecureBytes(copying: seed("bob/tablet/signing-key"))),
        deviceKeys: [
            (
                key: try! DevicePrivateKey(
                    suite: .classical,
                    secret: SecureBytes(copying: seed("bob/tablet/device-key"))
                ),
                createdAtMs: 1_789_998_200_000, retiredAtMs: movedAt,
                expiresAtMs: movedAt + Identity.defaultGracePeriodMs
            ),
            (
                key: try! DevicePrivateKey(
                    suite: .xwing,
                    secret: SecureBytes(copying: seed("bob/tablet/xwing-device-key"))
                ),
                createdAtMs: movedAt, retiredAtMs: nil, expiresAtMs: nil
            ),
        ]
    )
    let contacts = ContactBook([try! alice.card(nowMs: hourBefore)])
    return try! FilterEngine(
        store: store,
        accounts: [
            FilterAccount(identity: bob, contacts: contacts),
            FilterAccount(name: "bob-tablet", identity: tablet, contacts: contacts),
        ],
        reporter: reporter,
        clock: .fixed(1_790_000_001_000),
        logger: logger
    )
}()

let counter = Mutex<Int64>(0)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFilter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let line = Array(UnsafeBufferPointer(start: data, count: size))
    let seq = counter.withLock {
        $0 += 1
        return $0
    }
    let done = DispatchSemaphore(value: 0)
    let decisions = Mutex<Int>(-1)
    Task {
        let outcome = try? await engine.process(
            [PayloadInput.parse(line: line, defaultSeq: seq)],
            deduplicateBySeq: false
        )
        decisions.withLock { $0 = outcome?.decisions.count ?? -1 }
        done.signal()
    }
    done.wait()
    // Every input gets exactly one decision.
    precondition(decisions.withLock { $0 } == 1, "an input got no decision")
    return 0
}
