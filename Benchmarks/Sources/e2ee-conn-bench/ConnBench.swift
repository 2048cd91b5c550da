// e2ee-conn-bench: the relay serving clients while idle and slow connections are held (docs/BENCHMARKS.md, "Idle and
// slow clients"). Not a test: it prints figures.
//
// It starts the release `e2ee-gateway` (the local APNs) and `e2ee-relay serve` (SQLite) under an open-file limit of
// --fd-limit (1,024, as in the issue), enrolls one user through the relay, then, in four phases, holds nothing, then
// --idle plain TCP connections that never send a byte, then --slow connections trickling a TLS ClientHello one byte
// every 500 ms, then both; a connection the relay closes is opened again at once (an attacker keeps them held).
// In each phase it measures:
//   - time to first served: a new client (TCP, TLS, HTTP/2) asking GET /v1/health/live, --probes times spread over
//     --hold seconds (default 30: longer than the relay's 10-s handshake deadline, so that the relay has to close held
//     connections and the holders open them again while the probes run): p50, p90, max and failures (the issue's
//     target: at most 1 s);
//   - valid submits/s: --submits submits of one push each, --concurrency in flight, on one client, next to the phase
//     without held connections (a ratio);
//   - how many held connections the relay closed (reopened by the holder).
//
// Usage: swift run --package-path Benchmarks -c release e2ee-conn-bench --bin .build/release
//          [--idle 1100] [--slow 10] [--fd-limit 1024] [--probes 20] [--hold 30] [--submits 1000] [--concurrency 16]
import BenchSupport
import E2EECore
import Foundation
import Relay

#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var bin = ".build/release"
    var idle = 1100
    var slow = 10
    var fdLimit = 1024
    var probes = 20
    var hold = 30.0
    var submits = 1000
    var concurrency = 16

    init(_ arguments: [String]) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--bin": self.bin = value
            case "--idle": self.idle = Int(value) ?? self.idle
            case "--slow": self.slow = Int(value) ?? self.slow
            case "--fd-limit": self.fdLimit = Int(value) ?? self.fdLimit
            case "--probes": self.probes = Int(value) ?? self.probes
            case "--hold": self.hold = Double(value) ?? self.hold
            case "--submits": self.submits = Int(value) ?? self.submits
            case "--concurrency": self.concurrency = Int(value) ?? self.concurrency
            default: fail("unknown argument \(argument)")
            }
        }
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("e2ee-conn-bench: error: \(message)\n".utf8))
    exit(64)
}

func waitForPort(_ path: String, _ process: Process, _ what: String) async throws -> Int {
    guard let port = try await PortFile.wait(path, for: process) else {
        fail("\(what) did not start (no port in \(path))")
    }
    return port
}

func start(_ executable: String, _ arguments: [String], stdout: FileHandle = .nullDevice) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = stdout
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
}

/// Keeps `count` connections to a port open from a thread of its own, opening again each one the server closes.
/// A slow holder sends its connections a TLS ClientHello one byte every 500 ms (never complete).
final class Holder: @unchecked Sendable {
    // @unchecked Sendable: `stopped` and `reopened` are guarded by `lock`; the descriptors belong to the thread.
    private let lock = NSLock()
    private var stopped = false
    private var reopenedCount = 0
    private let done = DispatchSemaphore(value: 0)

    init(port: Int, count: Int, slow: Bool) {
        guard count > 0 else {
            self.done.signal()
            return
        }
        Thread.detachNewThread { [self] in
            var sockets = [Int32](repeating: -1, count: count)
            var sent = [Int](repeating: 0, count: count)
            let hello: [UInt8] =
                [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03] + [UInt8](repeating: 7, count: 500)
            var lastTrickle = Date()
            while !self.isStopped {
                for index in 0..<count {
                    if sockets[index] < 0 {
                        sockets[index] = Self.open(port)
                        sent[index] = 0
                        continue
                    }
                    if Self.closedByPeer(sockets[index]) {
                        close(sockets[index])
                        sockets[index] = Self.open(port)
                        sent[index] = 0
                        self.lock.lock()
                        self.reopenedCount += 1
                        self.lock.unlock()
                    }
                }
                if slow, Date().timeIntervalSince(lastTrickle) >= 0.5 {
                    lastTrickle = Date()
                    for index in 0..<count where sockets[index] >= 0 && sent[index] < hello.count {
                        var byte = hello[sent[index]]
                        if send(sockets[index], &byte, 1, Int32(MSG_NOSIGNAL)) == 1 { sent[index] += 1 }
                    }
                }
                usleep(20_000)
            }
            for fd in sockets where fd >= 0 { close(fd) }
            self.done.signal()
        }
    }

    private var isStopped: Bool {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.stopped
    }

    /// How many of its connections the server closed.
    var reopened: Int {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.reopenedCount
    }

    func stop() {
        self.lock.lock()
        self.stopped = true
        self.lock.unlock()
        self.done.wait()
    }

    /// A non-blocking connection attempt to 127.0.0.1:port (the listen backlog may be full: never wait on it).
    private static func open(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 && errno != EINPROGRESS {
            close(fd)
            return -1
        }
        return fd
    }

    /// Whether the server closed the connection (or it failed).
    private static func closedByPeer(_ fd: Int32) -> Bool {
        var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poll, 1, 0) > 0 else { return false }
        if poll.revents & Int16(POLLERR | POLLHUP) != 0 { return true }
        var byte: UInt8 = 0
        let read = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
        return read == 0 || (read < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
    return sorted[max(0, min(sorted.count - 1, rank))]
}

@main
struct ConnBench {
    static func main() async throws {
        let options = Options(Array(CommandLine.arguments.dropFirst()))
        // Room for the held connections on this side.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        guard Int(limit.rlim_cur) > options.idle + options.slow + 256 else {
            fail(
                "this process may open \(limit.rlim_cur) files: raise `ulimit -Hn` above \(options.idle + options.slow + 256)"
            )
        }

        let bin = URL(fileURLWithPath: options.bin).standardizedFileURL.path
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("conn-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let topic = "com.example.e2ee"

        // The local APNs, and the relay under the open-file limit.
        let keygen = try start(
            bin + "/e2ee-gateway",
            ["provider-key", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--out-dir", work + "/apns"]
        )
        keygen.waitUntilExit()
        let gateway = try start(
            bin + "/e2ee-gateway",
            [
                "serve", "--port-file", work + "/gateway.port", "--tls-dir", work + "/gateway-tls", "--topic", topic,
                "--provider-key", "TEAM123456:KEY1234567:\(work)/apns/AuthKey_KEY1234567.pub.pem", "--log-level",
                "error",
            ]
        )
        defer { gateway.terminate() }
        let gatewayPort = try await waitForPort(work + "/gateway.port", gateway, "e2ee-gateway")
        let relay = try start(
            "/bin/sh",
            [
                "-c", "ulimit -n \(options.fdLimit) && exec \"$0\" \"$@\"", bin + "/e2ee-relay", "serve", "--database",
                work + "/relay.sqlite", "--port", "0", "--port-file", work + "/relay.port", "--self-signed-tls-dir",
                work + "/relay-tls", "--apns-url", "https://127.0.0.1:\(gatewayPort)", "--apns-ca",
                work + "/gateway-tls/ca.pem", "--apns-key-file", work + "/apns/AuthKey_KEY1234567.p8",
                "--apns-key-id", "KEY1234567", "--apns-team-id", "TEAM123456", "--apns-topic", topic,
                "--recipient-rate", "100000000", "--token-rate", "100000000", "--log-level", "error",
            ]
        )
        defer { relay.terminate() }
        let port = try await waitForPort(work + "/relay.port", relay, "e2ee-relay")
        let url = "https://127.0.0.1:\(port)"
        let ca = work + "/relay-tls/ca.pem"

        // One user with one device, enrolled through the relay; every submit's envelope sealed beforehand.
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        let alice = try Identity.generate(userID: "alice", displayName: "Alice", deviceID: "laptop", nowMs: now)
        let bob = try Identity.generate(userID: "bob", displayName: "Bob", deviceID: "phone", nowMs: now)
        let list = try DeviceList.create(for: bob, push: nil, nowMs: now)
        let token = DeliveryToken()
        let client = try RelayClient(baseURL: url, trustedCAPEMPath: ca, timeout: .seconds(60))
        _ = try await client.publish(list)
        try await client.registerPush(
            userID: "bob",
            deviceID: "phone",
            address: RegisteredAddress(
                apns: APNsAddress(topic: topic, deviceToken: String(repeating: "ab", count: 32)),
                environment: "development"
            ),
            signingKey: bob.signingKey
        )
        try await client.setDeliveryTokens(
            userID: "bob",
            deviceID: "phone",
            tokens: [token],
            signingKey: bob.signingKey
        )
        let phases: [(name: String, idle: Int, slow: Int)] = [
            ("none held", 0, 0), ("\(options.idle) idle", options.idle, 0),
            ("\(options.slow) slowloris", 0, options.slow),
            ("\(options.idle) idle + \(options.slow) slowloris", options.idle, options.slow),
        ]
        let device = list.device(named: "phone")!.currentKey.publicKey
        var envelopes: [Envelope] = []
        for index in 0..<(options.submits * phases.count) {
            let message = InnerMessage(
                messageID: .random(),
                sentAtMs: now,
                senderUserID: "alice",
                senderSigningKeyID: alice.signingKey.publicKey.keyID,
                content: .text(TextMessage(threadID: "t", title: "Hi", body: "message \(index)"))
            )
            envelopes.append(try PushPayload.seal(message, to: device, signingKey: alice.signingKey).envelope)
        }

        print(
            "e2ee-relay under ulimit -n \(options.fdLimit); \(options.probes) probes over \(Int(options.hold)) s, "
                + "\(options.submits) submits "
                + "(\(options.concurrency) in flight) per phase"
        )
        print("phase | first served p50 / p90 / max (ms) | probes failed | submits/s | vs none | held closed by relay")
        var baseline = 0.0
        for (phaseIndex, phase) in phases.enumerated() {
            let idle = Holder(port: port, count: phase.idle, slow: false)
            let slow = Holder(port: port, count: phase.slow, slow: true)
            // Let the holders fill the relay's connections (and its backlog) first.
            try await Task.sleep(for: .seconds(phase.idle + phase.slow > 0 ? 3 : 0))
            var served: [Double] = []
            var failed = 0
            for _ in 0..<options.probes {
                let began = ContinuousClock.now
                let probe = try RelayClient(baseURL: url, trustedCAPEMPath: ca, timeout: .seconds(30))
                let healthy = await probe.isHealthy()
                let elapsed = ContinuousClock.now - began
                await probe.shutdown()
                if healthy {
                    served.append(
                        Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
                    )
                } else {
                    failed += 1
                }
                try await Task.sleep(for: .milliseconds(max(200, Int(options.hold * 1000) / max(1, options.probes))))
            }
            served.sort()
            let offset = phaseIndex * options.submits
            let began = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                var next = 0
                func add() {
                    let envelope = envelopes[offset + next]
                    next += 1
                    group.addTask {
                        _ = try await client.submit(userID: "bob", pushes: [("phone", envelope)], token: token)
                    }
                }
                for _ in 0..<min(options.concurrency, options.submits) { add() }
                while try await group.next() != nil {
                    if next < options.submits { add() }
                }
            }
            let elapsed = ContinuousClock.now - began
            let rate =
                Double(options.submits)
                / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            if phaseIndex == 0 { baseline = rate }
            let closed = idle.reopened + slow.reopened
            idle.stop()
            slow.stop()
            print(
                String(
                    format: "%@ | %.0f / %.0f / %.0f | %d of %d | %.0f | %.2f | %d",
                    phase.name,
                    percentile(served, 0.5),
                    percentile(served, 0.9),
                    served.last ?? .nan,
                    failed,
                    options.probes,
                    rate,
                    rate / baseline,
                    closed
                )
            )
            try await Task.sleep(for: .seconds(1))
        }
        let metrics = (try? await client.metricsText()) ?? ""
        print(
            metrics.split(separator: "\n").filter { $0.hasPrefix("relay_connections_closed_total{") }.joined(
                separator: "\n"
            )
        )
        await client.shutdown()
    }
}
