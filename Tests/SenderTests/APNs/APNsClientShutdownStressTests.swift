import Crypto
import Foundation
import Locking
import Logging
import LoopbackPKI
import Testing

@testable import Sender

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `shutdown()` a few milliseconds after the first pushes of a new client, while its connection is still being
/// opened (TCP connect, the inbox before the handler is attached, the TLS handshake), many times over: every push
/// gets an outcome, and `shutdown()` returns.
///
/// Each iteration is bounded by a generous deadline that fails the test instead of hanging the process.
@Suite("APNs client: shutdown while the connection is still opening")
struct APNsClientShutdownStressTests {
    static let iterations = 100
    static let deadline: Duration = .seconds(60)

    @Test("a gateway that accepts TCP and never answers TLS: shutdown during the handshake", .timeLimit(.minutes(5)))
    func shutdownDuringHandshake() async throws {
        let gateway = try SilentListener()
        defer { gateway.close() }
        let tally = try await Self.stress(baseURL: "https://127.0.0.1:\(gateway.port)", pushes: 3) { iteration in
            .microseconds(iteration % 8 * 750)  // 0 to 5.25 ms
        }
        #expect(tally.hung == 0, "iterations that did not finish: \(tally.hung)")
        #expect(tally.outcomes == ["clientShutdown": Self.iterations * 3], "\(tally.outcomes)")
    }

    @Test("shutdown at once: the pushes wait in the inbox before the handler is attached", .timeLimit(.minutes(5)))
    func shutdownBeforeAttach() async throws {
        let gateway = try SilentListener()
        defer { gateway.close() }
        let tally = try await Self.stress(baseURL: "https://127.0.0.1:\(gateway.port)", pushes: 3) { _ in nil }
        #expect(tally.hung == 0, "iterations that did not finish: \(tally.hung)")
        #expect(tally.outcomes == ["clientShutdown": Self.iterations * 3], "\(tally.outcomes)")
    }

    @Test("nothing listening: shutdown races the failed connect", .timeLimit(.minutes(5)))
    func shutdownRacingConnectFailure() async throws {
        // A port that was just bound and released: nothing listens there.
        let closed = try SilentListener()
        let port = closed.port
        closed.close()
        let tally = try await Self.stress(baseURL: "https://127.0.0.1:\(port)", pushes: 3) { iteration in
            iteration % 2 == 0 ? nil : .microseconds(iteration % 8 * 250)
        }
        #expect(tally.hung == 0, "iterations that did not finish: \(tally.hung)")
        #expect(
            Set(tally.outcomes.keys).isSubset(of: ["clientShutdown", "connectionError"]),
            "\(tally.outcomes)"
        )
        #expect(tally.outcomes.values.reduce(0, +) == Self.iterations * 3, "\(tally.outcomes)")
    }

    @Test(
        "the local gateway: shutdown during the handshake or with the first pushes on the way",
        .timeLimit(.minutes(5))
    )
    func shutdownAgainstGateway() async throws {
        try await GatewayHarness.with { gateway in
            let tally = try await Self.stress(baseURL: "https://127.0.0.1:\(gateway.port)", pushes: 3, gateway: gateway)
            {
                iteration in
                iteration % 3 == 0 ? nil : .microseconds(iteration % 11 * 500)
            }
            #expect(tally.hung == 0, "iterations that did not finish: \(tally.hung)")
            // Pushes are answered (200) or not sent because of the shutdown; nothing else.
            #expect(Set(tally.outcomes.keys).isSubset(of: ["clientShutdown", "200"]), "\(tally.outcomes)")
            #expect(tally.outcomes.values.reduce(0, +) == Self.iterations * 3, "\(tally.outcomes)")
        }
    }

    struct Tally {
        var outcomes: [String: Int] = [:]
        var hung = 0
    }

    /// Runs `iterations` rounds of: a new client, `pushes` pushes, `shutdown()` after `delay(iteration)` (or at once
    /// for `nil`), then the results. An iteration that does not finish within ``deadline`` is counted as hung and
    /// the loop stops.
    static func stress(
        baseURL: String,
        pushes: Int,
        gateway: GatewayHarness? = nil,
        delay: @escaping @Sendable (Int) -> Duration?
    ) async throws -> Tally {
        var tally = Tally()
        for iteration in 0..<Self.iterations {
            let client = try gateway?.makeClient(window: 10) ?? Self.client(baseURL: baseURL)
            let shutDown = Flag()
            let round = Task { () -> [APNsResult] in
                let batch = Task {
                    await client.send((0..<pushes).map { _ in GatewayHarness.push() })
                }
                if let wait = delay(iteration) { try? await Task.sleep(for: wait) }
                await client.shutdown()
                shutDown.set()
                return await batch.value
            }
            guard let results = await Self.value(of: round, within: Self.deadline) else {
                tally.hung += 1
                let state = shutDown.isSet ? "returned" : "did not return"
                Issue.record("iteration \(iteration) did not finish within \(Self.deadline); shutdown() \(state)")
                return tally
            }
            #expect(results.count == pushes)
            for result in results {
                tally.outcomes[result.localOutcome?.code ?? "\(result.status ?? 0)", default: 0] += 1
            }
        }
        return tally
    }

    /// The task's value, or `nil` if it has none within `limit` (the task is left running).
    static func value<T: Sendable>(of task: Task<T, Never>, within limit: Duration) async -> T? {
        let first = FirstAnswer<T?>()
        return await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            first.set(continuation)
            Task { first.resume(returning: await task.value) }
            Task {
                try? await Task.sleep(for: limit)
                first.resume(returning: nil)
            }
        }
    }

    final class Flag: Sendable {
        private let value = PThreadMutex(false)
        var isSet: Bool { self.value.withLock { $0 } }
        func set() { self.value.withLock { $0 = true } }
    }

    /// A continuation resumed by whichever answer comes first.
    final class FirstAnswer<T: Sendable>: Sendable {
        private let continuation = PThreadMutex<CheckedContinuation<T, Never>?>(nil)

        func set(_ continuation: CheckedContinuation<T, Never>) {
            self.continuation.withLock { $0 = continuation }
        }

        func resume(returning value: T) {
            self.continuation.withLock { $0.take() }?.resume(returning: value)
        }
    }

    /// A CA no server here presents, so every handshake that completes is untrusted, as with the system roots. One
    /// certificate instead of the system bundle: building a client's TLS context from the bundle costs tens of
    /// milliseconds of CPU in a debug build, 400 times over, on the threads every async test of the suite shares.
    static let strangerCA: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stress-ca-\(UUID()).pem").path
        try! LoopbackCertificates(caCommonName: "shutdown stress CA").writeCA(to: path)
        return path
    }()

    static func client(baseURL: String) throws -> APNsClient {
        let configuration = try APNsClientConfiguration(
            environment: .custom(baseURL: baseURL, trustedCAPEMPath: Self.strangerCA),
            keyID: APNsTestKeys.keyID,
            teamID: APNsTestKeys.teamID,
            signingKey: APNsSigningKey(privateKey: P256.Signing.PrivateKey()),
            window: 10,
            streamTimeout: .seconds(300),
            connectTimeout: .seconds(60)
        )
        return APNsClient(configuration: configuration, logger: Logger(label: "test"))
    }
}

/// A TCP socket on 127.0.0.1 that listens and never accepts: the kernel completes the TCP handshake (the backlog is
/// large), and nothing ever answers the TLS ClientHello.
final class SilentListener: Sendable {
    let port: Int
    private let descriptor: PThreadMutex<Int32>

    init() throws {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(why: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 4096) == 0 else {
            Self.closeDescriptor(fd)
            throw Failure(why: "bind/listen: \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.descriptor = PThreadMutex(fd)
    }

    func close() {
        let fd = self.descriptor.withLock { fd -> Int32 in
            defer { fd = -1 }
            return fd
        }
        if fd >= 0 { Self.closeDescriptor(fd) }
    }

    private static func closeDescriptor(_ fd: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #else
        _ = Darwin.close(fd)
        #endif
    }

    struct Failure: Error { let why: String }
}
