import APNsGateway
import Crypto
import E2EECore
import Foundation
import Logging
import TestSupport
import Testing

@testable import Relay
@testable import RelayClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The relay's own faults with real parts (docs/RELAY.md "Faults"): `e2ee-relay serve` processes, a PostgreSQL
/// server stopped and started under a running relay, a SQLite file whose writes the kernel refuses, a local APNs
/// gateway. Every fault gives a clear error or a retry; no accepted push is lost.
@Suite("e2ee-relay faults: database unreachable, disk full, no push lost", .serialized)
struct RelayFaultTests {
    /// Runs `e2ee-relay serve` with `arguments` (the TLS, APNs and key options added) until it exits, and returns
    /// its status and stderr. A relay that is still running after a generous minute is killed and reported.
    static func runToExit(
        database: String,
        folder: TemporaryFolder,
        prefix: [String] = []
    ) async throws -> (status: Int32, stderr: String) {
        let keyFile = folder.file("AuthKey.p8")
        if !FileManager.default.fileExists(atPath: keyFile) {
            _ = FileManager.default.createFile(
                atPath: keyFile,
                contents: Data(APNsTestKey.pem.utf8),
                attributes: [.posixPermissions: 0o600]
            )
        }
        let arguments = [
            "serve", "--database", database, "--port", "0", "--self-signed-tls-dir", folder.file("tls"),
            "--apns-url", "https://127.0.0.1:9", "--apns-key-file", keyFile,
            "--apns-key-id", GatewayFixture.keyID, "--apns-team-id", GatewayFixture.teamID,
            "--apns-topic", GatewayFixture.topic, "--tls-handshake-timeout", "300", "--request-head-timeout", "300",
        ]
        let child = try ChildProcess(
            "e2ee-relay",
            arguments,
            stdout: .discard,
            stderr: .file(folder.file("relay-\(UUID().uuidString.prefix(8)).stderr")),
            prefix: prefix
        )
        let status: Int32
        do {
            status = try await child.wait(timeout: .seconds(60))
        } catch let error as ProcessTestError {
            throw ProcessTestError("\(error); it was given an unusable database \(database)")
        }
        return (status, child.standardError)
    }

    /// The value of the metric line that starts with `name` (labels included).
    static func gauge(_ metrics: String, _ name: String) -> Double? {
        metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
            $0.split(separator: " ").last.flatMap { Double($0) }
        }
    }

    // MARK: database unreachable at start

    @Test("serve on a PostgreSQL URL whose port is closed exits 69 naming the server and what to check")
    func postgresClosedPortAtStart() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let port = try freeLoopbackPort()
        let (status, stderr) = try await Self.runToExit(
            database: "postgres://relay@127.0.0.1:\(port)/relay",
            folder: folder
        )
        #expect(status == 69, "\(stderr.suffix(2000))")
        #expect(stderr.contains("PostgreSQL at 127.0.0.1:\(port)/relay cannot be reached"), "\(stderr.suffix(2000))")
        #expect(stderr.lowercased().contains("connection refused"), "\(stderr.suffix(2000))")
        #expect(stderr.contains("check that the server runs and listens there"))
    }

    @Test("serve on a SQLite path in a missing folder exits 69 naming the folder")
    func sqliteMissingFolderAtStart() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let database = folder.file("missing/relay.sqlite")
        let (status, stderr) = try await Self.runToExit(database: database, folder: folder)
        #expect(status == 69, "\(stderr.suffix(2000))")
        #expect(stderr.contains("cannot open the SQLite database \(database)"), "\(stderr.suffix(2000))")
        #expect(stderr.contains("its folder \(folder.file("missing")) does not exist"), "\(stderr.suffix(2000))")
        #expect(!FileManager.default.fileExists(atPath: folder.file("missing")))
    }

    @Test("serve on a SQLite path under a regular file exits 69 saying it is not a folder")
    func sqliteParentIsAFileAtStart() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        _ = FileManager.default.createFile(atPath: folder.file("plain"), contents: Data("x".utf8))
        let database = folder.file("plain/relay.sqlite")
        let (status, stderr) = try await Self.runToExit(database: database, folder: folder)
        #expect(status == 69, "\(stderr.suffix(2000))")
        #expect(stderr.contains("\(folder.file("plain")) is not a folder"), "\(stderr.suffix(2000))")
    }

    @Test("serve on a SQLite path in a folder it cannot write exits 69 naming the folder and the user")
    func sqliteUnwritableFolderAtStart() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let readOnly = folder.file("read-only")
        try FileManager.default.createDirectory(atPath: readOnly, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: readOnly)
        var prefix: [String] = []
        if getuid() == 0 {
            // root writes anywhere: run the relay as nobody (65534), which owns everything else it needs.
            let setpriv = try #require(
                ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) },
                "setpriv (util-linux) is needed to drop root for this test"
            )
            prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
            let key = folder.file("AuthKey.p8")
            _ = FileManager.default.createFile(
                atPath: key,
                contents: Data(APNsTestKey.pem.utf8),
                attributes: [.posixPermissions: 0o600]
            )
            try await runCommand("/bin/chown", ["-R", "65534:65534", folder.path])
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
            try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: readOnly)
        }
        let database = readOnly + "/relay.sqlite"
        let (status, stderr) = try await Self.runToExit(database: database, folder: folder, prefix: prefix)
        #expect(status == 69, "\(stderr.suffix(2000))")
        #expect(stderr.contains("its folder \(readOnly) is not writable by this user"), "\(stderr.suffix(2000))")
        #expect(!FileManager.default.fileExists(atPath: database))
    }

    // MARK: PostgreSQL going away mid-run

    /// Bob with two devices, enrolled through `client`; alice seals to him.
    struct People {
        let alice: TestUser
        let bob: TestUser
        let token: DeliveryToken

        static func enrolled(_ client: RelayClient) async throws -> People {
            let people = People(
                alice: try TestUser.make("alice", devices: ["laptop"]),
                bob: try TestUser.make("bob"),
                token: DeliveryToken()
            )
            try await RelayProcessTests.enroll(people.bob, token: people.token, client: client)
            return people
        }

        /// One submit's pushes (one per device of bob) and their APNs bodies.
        func pushes(_ label: String) throws -> (pushes: [(deviceID: String, envelope: Envelope)], bodies: [[UInt8]]) {
            let sealed = try self.bob.devices.map {
                ($0.deviceID, try self.bob.sealText(from: self.alice.devices[0], to: $0.deviceID, body: label))
            }
            return (sealed.map { ($0.0, $0.1.envelope) }, sealed.map(\.1.apnsBody))
        }
    }

    /// GET /v1/health: the status and the `status` field.
    ///
    /// Each request expects one status; the answer can change between two of them (the database going or coming
    /// back, once), so both are asked twice.
    static func health(_ client: RelayClient) async throws -> (Int, String) {
        for expected in [200, 503, 200, 503] {
            do {
                let (status, body) = try await client.exchange(.GET, "/v1/health", body: nil, expect: expected)
                let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
                return (status, object?["status"] as? String ?? "")
            } catch let error as RelayError where error.code == .unexpectedResponse {
                continue
            }
        }
        throw ProcessTestError("/v1/health answered neither 200 nor 503")
    }

    @Test(
        "PostgreSQL stopped under a running relay: 503 storage-unavailable, health 503, no crash; restarted: the relay reconnects and every accepted push is delivered",
        .enabled(if: PostgresCluster.bindir != nil, PostgresCluster.skipNote)
    )
    func postgresStoppedMidRun() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await PostgresCluster.with { cluster in
            // APNs answers after 1 s, so pushes are in flight when the database goes.
            try await GatewayFixture.with(faults: FaultInjection(responseDelay: .seconds(1))) { gateway in
                let relay = try await RelayProcess(
                    folder: folder,
                    name: "relay",
                    database: cluster.url,
                    apnsURL: gateway.baseURL,
                    apnsCA: gateway.server.caCertificatePath,
                    keyFile: try gateway.writeKeyFile()
                )
                defer { relay.stop() }
                try await withClient(relay.baseURL, ca: relay.caPath, timeout: .seconds(60)) { client in
                    let people = try await People.enrolled(client)
                    var expected = Set<[UInt8]>()
                    var accepted = 0
                    for round in 0..<10 {
                        let (pushes, bodies) = try people.pushes("before \(round)")
                        let answer = try await client.submit(userID: "bob", pushes: pushes, token: people.token)
                        accepted += answer.pushes.count
                        expected.formUnion(bodies)
                    }
                    #expect(accepted == 20)

                    try await cluster.stop()
                    // Submits while the database is down: 503 storage-unavailable with Retry-After, nothing stored.
                    var refused: [(key: String, pushes: [(deviceID: String, envelope: Envelope)], bodies: [[UInt8]])] =
                        []
                    for round in 0..<2 {
                        let (pushes, bodies) = try people.pushes("while down \(round)")
                        let key = "down-\(round)"
                        do {
                            _ = try await client.submit(
                                userID: "bob",
                                pushes: pushes,
                                token: people.token,
                                idempotencyKey: key,
                                attempts: 1
                            )
                            Issue.record("a submit was accepted while PostgreSQL was stopped")
                        } catch let error as RelayError {
                            #expect(error.code.rawValue == "storage-unavailable", "\(error)")
                            #expect(error.code.httpStatus == 503)
                            #expect(error.retryAfterSeconds == 1)
                            #expect(error.message.contains("PostgreSQL at 127.0.0.1:\(cluster.port)/relay"))
                            #expect(error.message.contains("send the request again"))
                        }
                        refused.append((key, pushes, bodies))
                    }
                    let (downStatus, downText) = try await Self.health(client)
                    #expect(downStatus == 503)
                    #expect(downText == "database-unreachable")
                    #expect(relay.isRunning, "\(relay.stderr.suffix(3000))")

                    // The database comes back: the relay reconnects by itself.
                    try await cluster.start()
                    try await waitUntil(tries: 1200, every: .milliseconds(100)) {
                        try await Self.health(client).0 == 200
                    }
                    let (upStatus, upText) = try await Self.health(client)
                    #expect(upStatus == 200)
                    #expect(upText == "ok")
                    // The refused submits, sent again with their keys, are new: nothing of them had been stored.
                    for submit in refused {
                        let answer = try await client.submit(
                            userID: "bob",
                            pushes: submit.pushes,
                            token: people.token,
                            idempotencyKey: submit.key
                        )
                        #expect(answer.duplicate == false)
                        accepted += answer.pushes.count
                        expected.formUnion(submit.bodies)
                    }
                    for round in 0..<5 {
                        let (pushes, bodies) = try people.pushes("after \(round)")
                        accepted += try await client.submit(userID: "bob", pushes: pushes, token: people.token)
                            .pushes.count
                        expected.formUnion(bodies)
                    }
                    #expect(accepted == 34)
                    #expect(expected.count == 34)

                    // Every accepted push reaches APNs (bounded wait; the assertions are on the bytes and counts).
                    try await waitUntil(tries: 1200, every: .milliseconds(100)) {
                        Set(gateway.sink.records.map(\.bodyBytes)).isSuperset(of: expected)
                    }
                    let received = gateway.sink.records.map(\.bodyBytes)
                    let allDelivered = Set(received) == expected
                    #expect(allDelivered, "delivered \(Set(received).count) of \(expected.count)")
                    try await PostgresTestServer.withStore(url: cluster.url, logger: Logger(label: "pg-check")) {
                        store in
                        try await waitUntil(tries: 600, every: .milliseconds(100)) {
                            try await store.counts() == [.delivered: 34]
                        }
                        #expect(try await store.counts() == [.delivered: 34])
                    }
                    let metrics = try await client.metricsText()
                    #expect(metrics.contains(#"relay_submits_total{outcome="storage-unavailable"} 2"#))
                    print(
                        "relay fault test (PostgreSQL stopped): \(received.count) deliveries of \(expected.count) "
                            + "pushes, \(received.count - Set(received).count) sent twice"
                    )
                }
                relay.signal(SIGTERM)
                #expect(try await relay.waitForExit() == 0, "\(relay.stderr.suffix(3000))")
            }
        }
    }

    // MARK: SQLite disk full

    @Test(
        "SQLite with no room to write (RLIMIT_FSIZE on the running relay): 507 storage-full, health 503 storage-full, nothing half-stored, process alive; room again: health 200, every accepted push delivered"
    )
    func sqliteDiskFull() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let database = folder.file("relay.sqlite")
        try await GatewayFixture.with(faults: FaultInjection(responseDelay: .seconds(1))) { gateway in
            let relay = try await RelayProcess(
                folder: folder,
                name: "relay",
                database: database,
                apnsURL: gateway.baseURL,
                apnsCA: gateway.server.caCertificatePath,
                keyFile: try gateway.writeKeyFile(),
                ignoringFileSizeSignal: true
            )
            defer { relay.stop() }
            let pid = relay.pid
            let acceptedCount = try await withClient(relay.baseURL, ca: relay.caPath, timeout: .seconds(60)) { client in
                let people = try await People.enrolled(client)
                var expected = Set<[UInt8]>()
                var accepted = 0
                for round in 0..<10 {
                    let (pushes, bodies) = try people.pushes("before \(round)")
                    accepted += try await client.submit(userID: "bob", pushes: pushes, token: people.token)
                        .pushes.count
                    expected.formUnion(bodies)
                }

                // The disk is full: no file of the relay may grow past 16 KiB (the database and its WAL are
                // larger), so every write of SQLite fails as on a full disk (EFBIG here, ENOSPC there).
                let (clamped, clampOutput) = try await runCommand(
                    "/usr/bin/prlimit",
                    ["--pid", "\(pid)", "--fsize=16384:"]
                )
                #expect(clamped == 0, "\(clampOutput)")
                var refused: (key: String, pushes: [(deviceID: String, envelope: Envelope)], bodies: [[UInt8]])?
                for round in 0..<20 where refused == nil {
                    let (pushes, bodies) = try people.pushes("full \(round)")
                    let key = "full-\(round)"
                    do {
                        accepted += try await client.submit(
                            userID: "bob",
                            pushes: pushes,
                            token: people.token,
                            idempotencyKey: key,
                            attempts: 1
                        ).pushes.count
                        expected.formUnion(bodies)
                    } catch let error as RelayError {
                        #expect(error.code.rawValue == "storage-full", "\(error)")
                        #expect(error.code.httpStatus == 507)
                        #expect(error.retryAfterSeconds == 30)
                        #expect(error.message.contains("free space"), "\(error.message)")
                        refused = (key, pushes, bodies)
                    }
                }
                let full = try #require(refused, "no submit was refused with the disk full")
                #expect(relay.isRunning, "\(relay.stderr.suffix(3000))")
                // The last write found no room: health says so (a load balancer sends elsewhere)...
                let (fullStatus, fullText) = try await Self.health(client)
                #expect(fullStatus == 503)
                #expect(fullText == "storage-full")
                // ...while reads still work.
                #expect(try await client.fetchList(userID: "bob").devices.count == people.bob.devices.count)

                // Room again: the relay writes again by itself, no restart.
                let (lifted, liftOutput) = try await runCommand(
                    "/usr/bin/prlimit",
                    ["--pid", "\(pid)", "--fsize=unlimited:"]
                )
                #expect(lifted == 0, "\(liftOutput)")
                let again = try await client.submit(
                    userID: "bob",
                    pushes: full.pushes,
                    token: people.token,
                    idempotencyKey: full.key
                )
                #expect(again.duplicate == false)  // nothing of the refused submit had been stored
                // A write succeeded: healthy again.
                let (roomStatus, roomText) = try await Self.health(client)
                #expect(roomStatus == 200)
                #expect(roomText == "ok")
                accepted += again.pushes.count
                expected.formUnion(full.bodies)

                try await waitUntil(tries: 1200, every: .milliseconds(100)) {
                    Set(gateway.sink.records.map(\.bodyBytes)).isSuperset(of: expected)
                }
                let received = gateway.sink.records.map(\.bodyBytes)
                let allDelivered = Set(received) == expected
                #expect(allDelivered, "delivered \(Set(received).count) of \(expected.count)")
                #expect(accepted == expected.count)
                // Every outcome recorded: nothing queued or leased any more.
                try await waitUntil(tries: 600, every: .milliseconds(100)) {
                    let metrics = try await client.metricsText()
                    return Self.gauge(metrics, #"relay_queue_depth{state="queued"}"#) == 0
                        && Self.gauge(metrics, #"relay_queue_depth{state="leased"}"#) == 0
                }
                let metrics = try await client.metricsText()
                #expect(Self.gauge(metrics, #"relay_queue_depth{state="queued"}"#) == 0, "\(metrics)")
                #expect(Self.gauge(metrics, #"relay_queue_depth{state="leased"}"#) == 0, "\(metrics)")
                #expect(metrics.contains(#"relay_submits_total{outcome="storage-full"} 1"#), "\(metrics)")
                print(
                    "relay fault test (disk full): \(accepted) pushes accepted, \(received.count) deliveries, "
                        + "\(received.count - Set(received).count) sent twice"
                )
                return accepted
            }
            relay.signal(SIGTERM)
            #expect(try await relay.waitForExit() == 0, "\(relay.stderr.suffix(3000))")
            // Nothing half-stored: exactly the accepted pushes are rows, all delivered.
            let store = try SQLiteRelayStore(path: database)
            let counts = try await store.counts()
            await store.close()
            #expect(counts == [.delivered: acceptedCount])
        }
    }
}

/// A P-256 key in PKCS#8 PEM, for relays that never reach APNs.
enum APNsTestKey {
    static var pem: String { P256.Signing.PrivateKey().pemRepresentation }
}
