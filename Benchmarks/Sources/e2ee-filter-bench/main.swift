// The filter's decision path next to the libsodium floor of the primitives it needs, measured in the same run.
// Release build: swift run --package-path Benchmarks -c release e2ee-filter-bench [payloads] [--floor-only]
// C-API: this file calls libsodium directly, on purpose, for the floor.
import CSodiumBench
import Dispatch
import E2EECore
import Foundation
import Logging
import NotificationFilter
import PushTransport

let count = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 20_000 : 20_000
let logger = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
let nowMs: Int64 = 1_800_000_000_000

/// Process CPU time (all threads), so a path that opens batches on both cores is charged for both.
func cpuNanos() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) * 1e9 + Double(ts.tv_nsec)
}

func nanos(_ body: () throws -> Void) rethrows -> Double {
    let start = cpuNanos()
    try body()
    return cpuNanos() - start
}

// MARK: payloads: a realistic mix (1/4 each: text, receipt, cancel of an unknown call, call invite with a long ring)

let bob = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: UInt64(nowMs - 1000))
let alice = try Identity.generate(userID: "alice", displayName: "Alice", nowMs: 1)
let bobKey = bob.currentDeviceKey.privateKey.publicKey
func makeBodies(_ n: Int) throws -> [[UInt8]] {
    try (0..<n).map { i in
        let content: MessageContent =
            switch ProcessInfo.processInfo.environment["BENCH_MIX"] == "texts" ? 0 : i % 4 {
            case 0: .text(TextMessage(threadID: "t", title: "Hi", body: String(repeating: "x", count: 200)))
            case 1: .receipt(Receipt(messageIDs: [.random()]))
            case 2: .callCancel(CallCancel(callID: UUID(), reason: .remoteEnded))
            default:
                .callInvite(
                    CallInvite(
                        callID: UUID(),
                        callerHandle: "alice",
                        displayName: "Alice",
                        hasVideo: false,
                        ringTimeoutSeconds: 3600
                    )
                )
            }
        let m = InnerMessage(
            messageID: .random(),
            sentAtMs: UInt64(nowMs),
            senderUserID: "alice",
            senderSigningKeyID: alice.signingKey.publicKey.keyID,
            content: content
        )
        return try PushPayload.seal(m, to: bobKey, signingKey: alice.signingKey).apnsBody
    }
}
FileHandle.standardError.write(Data("sealing \(count) payloads...\n".utf8))
let bodies = try makeBodies(count)

// MARK: floor: per payload, 1 X25519 + 8 HMAC-SHA256 (HPKE base-mode setup) + ChaCha20-Poly1305 open of
// 1,552 bytes + sodium_unpad + 1 Ed25519 verify of the signed part (~160 bytes), raw libsodium, buffers reused.

precondition(sodium_init() >= 0)
var sk = [UInt8](repeating: 7, count: 32)
var pk = [UInt8](repeating: 0, count: 32)
var out = [UInt8](repeating: 0, count: 32)
crypto_scalarmult_curve25519_base(&pk, sk)
var key = [UInt8](repeating: 1, count: 32)
var nonce = [UInt8](repeating: 2, count: 12)
var plain = [UInt8](repeating: 0, count: 1536)
var cipher = [UInt8](repeating: 0, count: 1552)
var clen: UInt64 = 0
var aad = [UInt8](repeating: 3, count: 43)
crypto_aead_chacha20poly1305_ietf_encrypt(&cipher, &clen, plain, 1536, aad, 43, nil, nonce, key)
var edPK = [UInt8](repeating: 0, count: 32)
var edSK = [UInt8](repeating: 0, count: 64)
crypto_sign_keypair(&edPK, &edSK)
var signed = [UInt8](repeating: 5, count: 160)
var sig = [UInt8](repeating: 0, count: 64)
crypto_sign_detached(&sig, nil, signed, 160, edSK)
var hmacIn = [UInt8](repeating: 9, count: 80)
var mac = [UInt8](repeating: 0, count: 32)
var padded = [UInt8](repeating: 0, count: 1536)
padded[300] = 0x80
var sink: UInt64 = 0
@MainActor func floorOnce() {
    sink &+= UInt64(crypto_scalarmult_curve25519(&out, sk, pk) == 0 ? 1 : 0)
    for _ in 0..<8 {
        var st = crypto_auth_hmacsha256_state()
        crypto_auth_hmacsha256_init(&st, key, 32)
        crypto_auth_hmacsha256_update(&st, hmacIn, 80)
        crypto_auth_hmacsha256_final(&st, &mac)
    }
    var mlen: UInt64 = 0
    sink &+= UInt64(
        crypto_aead_chacha20poly1305_ietf_decrypt(&plain, &mlen, nil, cipher, 1552, aad, 43, nonce, key) == 0 ? 1 : 0
    )
    var unpadded = 0
    sink &+= UInt64(sodium_unpad(&unpadded, padded, 1536, 1536) == 0 ? 1 : 0)
    sink &+= UInt64(crypto_sign_verify_detached(sig, signed, 160, edPK) == 0 ? 1 : 0)
}

func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }

// MARK: the decision path

func engine(at path: String) throws -> FilterEngine {
    let store = try FilterStateStore(path: path, logger: logger)
    let reporter = CallKitReporter(
        configuration: CallProviderConfiguration(maximumCallGroups: 1_000_000),
        sink: InMemoryCallEventSink(),
        clock: .fixed(nowMs),
        logger: logger
    )
    return try FilterEngine(
        store: store,
        accounts: [FilterAccount(identity: bob, contacts: ContactBook([try alice.card()]))],
        reporter: reporter,
        clock: .fixed(nowMs),
        logger: logger
    )
}

func runEngine(_ e: FilterEngine, _ slice: ArraySlice<[UInt8]>, batch: Int, seqBase: Int64) async throws {
    var i = slice.startIndex
    while i < slice.endIndex {
        let end = min(i + batch, slice.endIndex)
        let inputs = (i..<end).map { PayloadInput(seq: seqBase + Int64($0), apnsID: nil, body: slice[$0]) }
        let outcome = try await e.process(inputs, deduplicateBySeq: false)
        precondition(outcome.decisions.count == inputs.count)
        i = end
    }
}

let dir = "/dev/shm/e2ee-filter-bench-\(getpid())"
let diskDir = NSTemporaryDirectory() + "e2ee-filter-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
try FileManager.default.createDirectory(atPath: diskDir, withIntermediateDirectories: true)
defer {
    try? FileManager.default.removeItem(atPath: dir)
    try? FileManager.default.removeItem(atPath: diskDir)
}

// Warm-up.
for _ in 0..<200 { floorOnce() }

var floorRuns: [Double] = []
var onlyOpenRuns: [Double] = []
for _ in 0..<5 {
    floorRuns.append(nanos { for _ in 0..<count { floorOnce() } } / Double(count))
}
if CommandLine.arguments.contains("--floor-only") {
    // For Tools/bench/pipeline_bench.py scaling: the floor alone, next to a process measured from outside.
    print(String(format: "libsodium floor: %.1f µs CPU/payload", median(floorRuns) / 1000))
    exit(0)
}
// Opening alone (E2EECore, one core): parse + HPKE + unpad + decode + verify, no state.
let contacts = ContactBook([try alice.card()])
for _ in 0..<3 {
    onlyOpenRuns.append(
        try nanos {
            for body in bodies {
                _ = try PushPayload.open(
                    body: body,
                    deviceKey: { bob.deviceKey(for: $0, nowMs: UInt64(nowMs)) },
                    signingKey: { contacts.signingKey(userID: $0, keyID: $1) }
                )
            }
        } / Double(count)
    )
}

// Whole decision path, one engine, batches of 1 and 64 (SQLite on tmpfs, then on disk with synchronous=FULL).
func timed(_ body: () async throws -> Void) async rethrows -> Double {
    let start = cpuNanos()
    try await body()
    return cpuNanos() - start
}

func wallTimed(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start)
}
var results: [(String, Double)] = []
for (label, batch, base) in [
    ("decision path, batch 1, state on tmpfs", 1, dir), ("decision path, batch 64, state on tmpfs", 64, dir),
    ("decision path, batch 64, state on disk (fsync)", 64, diskDir),
] {
    var runs: [Double] = []
    for r in 0..<3 {
        let e = try engine(at: "\(base)/\(batch)-\(r).sqlite")
        runs.append(try await timed { try await runEngine(e, bodies[...], batch: batch, seqBase: 0) } / Double(count))
    }
    results.append((label, median(runs)))
}
// Throughput on both cores: two engines (two accounts' state files) deciding halves at once.
let e1 = try engine(at: "\(dir)/both-1.sqlite")
let e2 = try engine(at: "\(dir)/both-2.sqlite")
let half = count / 2
let bothNs = try await wallTimed {
    async let a: Void = runEngine(e1, bodies[0..<half], batch: 64, seqBase: 0)
    async let b: Void = runEngine(e2, bodies[half...], batch: 64, seqBase: 0)
    _ = try await (a, b)
}

let floorNs = median(floorRuns)
let openNs = median(onlyOpenRuns)
func row(_ name: String, _ ns: Double) {
    print(
        String(
            format: "%@ %9.1f µs CPU/payload  %6.2fx floor",
            name.padding(toLength: 60, withPad: " ", startingAt: 0) as NSString,
            ns / 1000,
            ns / floorNs
        )
    )
}
print(
    "e2ee-filter-bench: \(count) mixed payloads (text, receipt, cancel, invite), release build, \(ProcessInfo.processInfo.activeProcessorCount) cores; process CPU time per payload (median of runs)"
)
row("libsodium floor (X25519, 8 HMAC, ChaCha open, unpad, verify)", floorNs)
row("E2EECore open (JSON → envelope → HPKE → verify), one core", openNs)
for (name, ns) in results { row(name, ns) }
let throughput = Double(count) / (bothNs / 1e9)
print(String(format: "throughput, both cores (2 engines, tmpfs state), wall clock: %.0f payloads/s", throughput))
print(String(format: "floor throughput, one core:                               %.0f payloads/s", 1e9 / floorNs))
if sink == 0 { print("") }
