import Dispatch
// libFuzzer target: the filter's whole decode path — an input line (request line, spool record or bare APNs body)
// → JSON → envelope → HPKE → inner message → signature → replay/clock/call rules → exactly one decision.
// Seeds: the bodies in Fixtures/e2ee-vectors.json (see `make fuzz`), sealed to the keys built below from the same
// seed labels, so mutations of real payloads reach every stage.
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
    return try! FilterEngine(
        store: store,
        accounts: [FilterAccount(identity: bob, contacts: ContactBook([try alice.card(nowMs: hourBefore)]))],
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
