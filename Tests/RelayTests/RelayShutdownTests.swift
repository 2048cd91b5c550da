import APNsGateway
@_spi(Vectors) import E2EECore
import Foundation
import TestSupport
import Testing

@testable import Relay

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGTERM to a real `e2ee-relay serve` while real `e2ee-send text --relay` processes submit to it: the relay drains
/// and exits 0, every push it accepted is delivered, and no sender is told "nothing was queued" about a message the
/// relay queued (docs/RELAY.md "SIGTERM").
@Suite("e2ee-relay SIGTERM under load", .serialized)
struct RelayShutdownTests {
    /// What one sender was told, by exit status.
    enum Told: Hashable {
        /// Exit 0: the relay answered 202.
        case accepted
        /// Exit 75: nothing was queued (the relay refused, or could not be reached at all).
        case notQueued
        /// Exit 79: the submit was written and no answer came; the relay may have queued it.
        case unknown
        case other(Int32)
    }

    @Test(
        "20 rounds of SIGTERM 0.1-0.5 s after 8 concurrent senders start: no crash, no accepted push lost, none misreported"
    )
    func sigtermUnderLoad() async throws {
        let rounds = 20
        let senders = Int(ProcessInfo.processInfo.environment["H1_SENDERS"] ?? "8") ?? 8
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await GatewayFixture.with { gateway in
            let keyFile = try gateway.writeKeyFile()
            let database = folder.file("relay.sqlite")
            let bob = try TestUser.make("bob", devices: ["phone"])
            let token = DeliveryToken()
            let alice = try Identity.generate(
                userID: "alice",
                displayName: "Alice",
                deviceID: "laptop",
                nowMs: UInt64(WallClock.system.nowMs)
            )
            try alice.save(path: folder.file("alice.identity"))
            try FileManager.default.createDirectory(atPath: folder.file("contacts"), withIntermediateDirectories: true)
            try SecretFile.write(
                path: folder.file("contacts/bob.delivery-token"),
                bytes: SecureBytes(copying: Array((token.hex + "\n").utf8))
            )

            var told: [MessageID: Told] = [:]
            var crashes: [String] = []
            for round in 0..<rounds {
                let relay = try await RelayProcess(
                    folder: folder,
                    name: "relay-\(round)",
                    database: database,
                    apnsURL: gateway.baseURL,
                    apnsCA: gateway.server.caCertificatePath,
                    keyFile: keyFile
                )
                defer { relay.stop() }
                if round == 0 {
                    try await withClient(relay.baseURL, ca: relay.caPath) { client in
                        try await RelayProcessTests.enroll(bob, token: token, client: client)
                    }
                }
                var running: [(MessageID, ChildProcess)] = []
                for index in 0..<senders {
                    let id = MessageID.random()
                    let child = try ChildProcess(
                        "e2ee-send",
                        [
                            "text", "--to", "bob", "--body", "round \(round) sender \(index)", "--message-id", id.hex,
                            "--identity", folder.file("alice.identity"), "--pins", folder.file("pins.json"),
                            "--contacts", folder.file("contacts"), "--relay", relay.baseURL, "--relay-ca", relay.caPath,
                            "--relay-timeout", "60",
                        ],
                        stdout: .discard
                    )
                    running.append((id, child))
                }
                // SIGTERM lands at different points of the senders' work from round to round: once the first submit
                // was accepted, 0 to 200 ms later, while the others connect, fetch the list, submit or read the answer.
                try await waitUntil(tries: 3000, every: .milliseconds(10)) { relay.stderr.contains("submit accepted") }
                try await Task.sleep(for: .milliseconds(50 * (round % 5)))
                relay.signal(SIGTERM)
                let status = try await relay.waitForExit()
                if status != 0 {
                    try? relay.stderr.write(toFile: "/tmp/h1-crash-\(round).txt", atomically: true, encoding: .utf8)
                }
                if status != 0 { crashes.append("round \(round): exit \(status): \(relay.stderr.suffix(3000))") }
                for (id, child) in running {
                    let status = try await child.wait(timeout: .seconds(300))
                    let stderr = child.standardError
                    switch status {
                    case 0: told[id] = .accepted
                    case 75:
                        told[id] = .notQueued
                        #expect(stderr.contains("Nothing was queued"), "\(stderr)")
                    case 79:
                        told[id] = .unknown
                        #expect(!stderr.lowercased().contains("nothing was queued"), "\(stderr)")
                        #expect(stderr.contains("may have queued"), "\(stderr)")
                    default:
                        told[id] = .other(status)
                        Issue.record("a sender exited \(status): \(stderr.suffix(1500))")
                    }
                }
            }

            // One more life, left to run: whatever the stopped relays left queued is delivered now.
            let last = try await RelayProcess(
                folder: folder,
                name: "relay-last",
                database: database,
                apnsURL: gateway.baseURL,
                apnsCA: gateway.server.caCertificatePath,
                keyFile: keyFile
            )
            defer { last.stop() }
            try await withClient(last.baseURL, ca: last.caPath) { client in
                try await waitUntil(tries: 2400, every: .milliseconds(50)) {
                    let metrics = try await client.metricsText()
                    return RelayFaultTests.gauge(metrics, #"relay_queue_depth{state="queued"}"#) == 0
                        && RelayFaultTests.gauge(metrics, #"relay_queue_depth{state="leased"}"#) == 0
                }
            }
            last.signal(SIGTERM)
            #expect(try await last.waitForExit() == 0)
            let store = try SQLiteRelayStore(path: database)
            let left = try await store.counts()
            await store.close()
            #expect(left[.queued] == nil && left[.leased] == nil, "\(left)")

            // Every push APNs received, opened with bob's phone key: the messages the relay queued.
            let phone = bob.device("phone")
            var delivered = Set<MessageID>()
            for record in gateway.sink.records {
                let opened = try PushPayload.open(
                    body: record.bodyBytes,
                    deviceKey: { id in phone.deviceKeys.first { $0.keyID == id }?.privateKey },
                    signingKey: { user, _ in user == "alice" ? alice.signingKey.publicKey : nil }
                )
                delivered.insert(opened.message.messageID)
            }
            let lost = told.filter { $0.value == .accepted && !delivered.contains($0.key) }
            let misreported = told.filter { $0.value == .notQueued && delivered.contains($0.key) }
            let counts = Dictionary(grouping: told.values, by: { $0 }).mapValues(\.count)
            print("SIGTERM rounds: told \(counts), delivered \(delivered.count), records \(gateway.sink.records.count)")
            #expect(crashes.isEmpty, "\(crashes.count) of \(rounds) relays did not exit 0: \(crashes)")
            #expect(lost.isEmpty, "\(lost.count) accepted messages were never delivered (told: \(counts))")
            #expect(misreported.isEmpty, "\(misreported.count) senders were told nothing was queued (told: \(counts))")
            #expect(told.count == rounds * senders)
            // The rounds did catch senders in flight: some were accepted, and some were stopped by the shutdown.
            #expect((counts[.accepted] ?? 0) > 0, "told: \(counts)")
            #expect((counts[.notQueued] ?? 0) + (counts[.unknown] ?? 0) > 0, "told: \(counts)")
        }
    }
}
