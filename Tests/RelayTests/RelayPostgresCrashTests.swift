import APNsGateway
import E2EECore
import Foundation
import Logging
import NotificationFilter
import Synchronization
import TestSupport
import Testing

@testable import Relay

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Counters shared by the sending tasks.
final class Counters: Sendable {
    let killed = Atomic<Bool>(false)
    let accepted = Atomic<Int>(0)
    let duplicateAnswers = Atomic<Int>(0)
}

/// Three `e2ee-relay` processes on one PostgreSQL database, thousands of pushes, one instance SIGKILLed mid-run and
/// restarted: every accepted push reaches APNs; duplicates are counted, none is lost.
@Suite("e2ee-relay on PostgreSQL: three instances, one SIGKILLed", .serialized)
struct RelayPostgresCrashTests {
    /// Submits of 2 pushes each (bob has two devices); E2EE_RELAY_CRASH_SUBMITS overrides for quick local runs.
    static let submits = Int(ProcessInfo.processInfo.environment["E2EE_RELAY_CRASH_SUBMITS"] ?? "") ?? 1000

    @Test(
        "every accepted push is delivered after an instance is SIGKILLed mid-run and restarted",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func threeInstancesOneKilled() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let url = try await PostgresTestServer.freshDatabaseURL()
        try await GatewayFixture.with { gateway in
            let keyFile = try gateway.writeKeyFile()
            func start(_ name: String) async throws -> RelayProcess {
                try await RelayProcess(
                    folder: folder,
                    name: name,
                    database: url,
                    apnsURL: gateway.baseURL,
                    apnsCA: gateway.server.caCertificatePath,
                    keyFile: keyFile
                )
            }
            var instances = [try await start("r0"), try await start("r1"), try await start("r2")]
            defer { for instance in instances { instance.stop() } }

            let alice = try TestUser.make("alice", devices: ["laptop"])
            let bob = try TestUser.make("bob")
            let token = DeliveryToken()
            try await withClient(instances[0].baseURL, ca: instances[0].caPath) { client in
                try await RelayProcessTests.enroll(bob, token: token, client: client)
            }

            // Seal everything first (the sealing is not what is measured).
            var work: [(key: String, pushes: [(deviceID: String, envelope: Envelope)])] = []
            var expected = Set<[UInt8]>()
            for index in 0..<Self.submits {
                let sealed = try bob.devices.map {
                    ($0.deviceID, try bob.sealText(from: alice.devices[0], to: $0.deviceID, body: "\(index)"))
                }
                expected.formUnion(sealed.map(\.1.apnsBody))
                work.append(("crash-\(index)", sealed.map { ($0.0, $0.1.envelope) }))
            }
            let work_ = work

            let clients = try instances.map {
                try RelayClient(baseURL: $0.baseURL, trustedCAPEMPath: $0.caPath, timeout: .seconds(20))
            }
            let counters = Counters()
            let clock = ContinuousClock()
            let started = clock.now
            let victim = instances[2]
            // Eight senders; a submit that cannot reach its instance is retried on the next with the same key.
            try await withCleanup(clients, { for client in $0 { await client.shutdown() } }) { clients in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for lane in 0..<8 {
                        group.addTask {
                            for index in stride(from: lane, to: work_.count, by: 8) {
                                var target = index % 3
                                var attempts = 0
                                while true {
                                    // Once instance 2 is dead, send elsewhere (a client fails over; waiting for a dead
                                    // instance's connection timeouts only slows the run).
                                    if target == 2, counters.killed.load(ordering: .relaxed) { target = lane % 2 }
                                    do {
                                        let answer = try await clients[target].submit(
                                            userID: "bob",
                                            pushes: work_[index].pushes,
                                            token: token,
                                            idempotencyKey: work_[index].key,
                                            attempts: 1
                                        )
                                        counters.accepted.add(answer.pushes.count, ordering: .relaxed)
                                        if answer.duplicate { counters.duplicateAnswers.add(1, ordering: .relaxed) }
                                        break
                                    } catch let error as RelayError
                                        where (error.code == .transport || error.code == .outcomeUnknown)
                                        && attempts < 6
                                    {
                                        // Not reached (transport), or sent to the killed instance without an answer
                                        // (outcome-unknown): the same key on another instance settles it.
                                        attempts += 1
                                        target = (target + 1) % 3
                                    }
                                }
                                // Mid-run: once a quarter of the pushes reached APNs, kill instance 2.
                                if gateway.sink.records.count >= 500,
                                    !counters.killed.exchange(true, ordering: .relaxed)
                                {
                                    victim.signal(SIGKILL)
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let submitted = clock.now
            if !counters.killed.exchange(true, ordering: .relaxed) { victim.signal(SIGKILL) }
            #expect(try await victim.waitForExit() == 128 + SIGKILL)
            #expect(counters.accepted.load(ordering: .relaxed) == 2 * Self.submits)

            // The killed instance comes back on the same database.
            instances[2] = try await start("r2-restarted")
            try await waitUntil(tries: 2400, every: .milliseconds(50)) {
                Set(gateway.sink.records.map(\.bodyBytes)).count >= expected.count
            }
            // Pushes the killed instance sent but never recorded are leased again when their lease ends, and sent again.
            try await PostgresTestServer.withStore(url: url, logger: Logger(label: "pg-check")) { store in
                try await waitUntil(tries: 1200, every: .milliseconds(50)) {
                    try await store.counts() == [.delivered: expected.count]
                }
                let received = gateway.sink.records.map(\.bodyBytes)
                print(
                    "relay crash test: submits took \(submitted - started), all delivered after \(clock.now - started)"
                )
                let unique = Set(received)
                let allDelivered = unique == expected
                #expect(allDelivered, "delivered \(unique.count) of \(expected.count)")
                let duplicates = received.count - unique.count
                print(
                    "relay crash test: \(expected.count) pushes accepted (\(counters.duplicateAnswers.load(ordering: .relaxed)) "
                        + "submits answered as duplicates), \(received.count) deliveries, \(duplicates) duplicate deliveries"
                )

                #expect(try await store.counts() == [.delivered: expected.count])

                // Every duplicate is harmless: each of bob's devices runs the real filter over what APNs delivered
                // to it (duplicates included, in delivery order); each message alerts once, every copy is a replay.
                let contacts = folder.file("filter-contacts")
                try FileManager.default.createDirectory(atPath: contacts, withIntermediateDirectories: true)
                try Data(alice.list.jsonData()).write(to: URL(fileURLWithPath: contacts + "/alice.card.json"))
                for device in bob.devices {
                    let token = TestUser.token(device.deviceID)
                    let records = gateway.sink.records.filter { $0.deviceToken == token }
                    let unique = Set(records.map(\.bodyBytes)).count
                    let identityPath = folder.file("\(device.deviceID).identity")
                    try device.save(path: identityPath)
                    // The filter's builder, in process: the pushes were sealed at the test users' clock
                    // (1,800,000,000,000 ms), which the filter is given (the executable has only the real clock).
                    var options = FilterAppOptions(
                        accounts: [.init(identity: identityPath, contacts: contacts)],
                        statePath: folder.file("\(device.deviceID).filter.sqlite")
                    )
                    options.clock = .fixed(1_800_000_000_000)
                    let filter = try FilterApp.build(
                        options,
                        logger: Logger(label: "filter") { _ in SwiftLogNoOpLogHandler() }
                    )
                    // In batches, as `run` decides a stream: one batch never holds the test process's threads long.
                    let inputs = records.enumerated().map {
                        PayloadInput.parse(line: Array($1.jsonLine().utf8), defaultSeq: Int64($0 + 1))
                    }
                    var lines: [String] = []
                    for start in stride(from: 0, to: inputs.count, by: 64) {
                        let batch = Array(inputs[start..<min(start + 64, inputs.count)])
                        lines += try await filter.engine.process(batch, deduplicateBySeq: false).lines
                    }
                    var reasons: [String: Int] = [:]
                    for line in lines {
                        let decision = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                        reasons["\(decision?["decision"] ?? "-")/\(decision?["reason"] ?? "-")", default: 0] += 1
                    }
                    #expect(unique == Self.submits, "\(device.deviceID): \(unique) distinct pushes delivered")
                    #expect(
                        reasons
                            == ["alert/text": unique].merging(
                                records.count > unique ? ["silence/replay": records.count - unique] : [:]
                            ) { a, _ in a },
                        "\(device.deviceID): \(records.count) deliveries, decisions \(reasons)"
                    )
                }
                // A measurement, not an assertion: enqueue → delivered across the run (debug build, shared cores).
                let latencies = try await store.deliveredLatenciesMs()
                if !latencies.isEmpty {
                    let p50 = latencies[latencies.count / 2]
                    let p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
                    print(
                        "relay crash test: enqueue→delivered p50 \(p50) ms, p99 \(p99) ms over \(latencies.count) pushes"
                    )
                }
            }
            for instance in instances { instance.signal(SIGTERM) }
            for instance in instances where instance !== victim {
                #expect(try await instance.waitForExit() == 0)
            }
            if let keep = ProcessInfo.processInfo.environment["E2EE_RELAY_KEEP_LOGS"] {
                try? FileManager.default.removeItem(atPath: keep)
                try? FileManager.default.copyItem(atPath: folder.path, toPath: keep)
            }
        }
    }
}
