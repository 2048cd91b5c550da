import Configuration
import E2EECore
import Foundation
import Locking
import Logging
import RelayClient
import ServiceLifecycle
import TestSupport
import Testing

@testable import Relay

/// A second push service, as an embedder adds one: ``ServeOptions`` reads and checks its options, and
/// ``buildApplication(_:logger:storeKinds:pushServices:)`` opens it, registers its addresses, delivers through its
/// deliverer and closes it, through ``RelayPushServiceKind`` alone (docs/EXTENDING.md §2).
@Suite("Push service kinds")
struct RelayPushServiceKindTests {
    /// The fake service (``FakeServiceRules``): `--fake-key` required, `--fake-timeout` (default 20 s) for its
    /// attempts; its opening and closing are recorded, its deliverer accepts everything.
    struct FakeKind: RelayPushServiceKind {
        let events = PThreadMutex<[String]>([])
        /// Once set, the service reports every address unregistered (410).
        let gone = PThreadMutex(false)
        let deliverer: RecordingDeliverer
        var failOpen = false

        init() {
            let gone = self.gone
            self.deliverer = RecordingDeliverer(service: FakeServiceRules.service) { _ in
                gone.withLock { $0 }
                    ? DeliveryReport(outcome: .unregistered(sinceMs: nil), status: 410, label: "410", signal: .answered)
                    : DeliveryReport(outcome: .delivered, status: 200, label: "200", signal: .answered)
            }
        }
        var service: PushService { FakeServiceRules.service }
        var options: [ServeOptions.Option] {
            [.init(name: "fake-key", kind: .string), .init(name: "fake-timeout", kind: .int)]
        }

        func check(_ options: ServeOptions) throws(RelayError) {
            guard case .string(let key)? = options.serviceValues["fake-key"], !key.isEmpty else {
                throw RelayError(.configuration, "give --fake-key")
            }
        }

        func attemptTimeout(_ options: ServeOptions) -> (seconds: Int, name: String) {
            guard case .int(let seconds)? = options.serviceValues["fake-timeout"] else { return (20, "fake timeout") }
            return (seconds, "fake timeout")
        }

        func startDescription(_ options: ServeOptions) -> String {
            guard case .string(let key)? = options.serviceValues["fake-key"] else { return "Fake" }
            return "Fake (key \(key))"
        }

        func open(_ options: ServeOptions, logger: Logger) async throws(RelayError) -> OpenedPushService {
            self.events.withLock { $0.append("open") }
            if self.failOpen { throw RelayError(.configuration, "the fake key is unreadable") }
            return OpenedPushService(
                rules: FakeServiceRules(),
                deliverer: self.deliverer,
                close: { self.events.withLock { $0.append("close") } }
            )
        }
    }

    static let required: [String: ConfigContent] = [
        "self-signed-tls-dir": .string("/tmp/unused"), "apns-key-id": .string("K"), "apns-team-id": .string("T"),
        "apns-topic": .stringArray(["com.example.app"]),
    ]

    @Test("a service's options come from flags, the environment and the file, are checked, and bound the lease")
    func options() throws {
        let services: [any RelayPushServiceKind] = [APNsServiceKind(), FakeKind()]
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let file = folder.file("relay.json")
        try Data(#"{"fake-timeout": 30}"#.utf8).write(to: URL(fileURLWithPath: file))
        var flags = Self.required
        flags["lease-seconds"] = .int(35)
        let options = try ServeOptions.resolve(
            flags: flags,
            environment: ["E2EE_RELAY_FAKE_KEY": "k1"],
            configFile: file,
            pushServices: services
        )
        #expect(options.serviceValues["fake-key"] == .string("k1"))
        #expect(options.serviceValues["fake-timeout"] == .int(30))
        #expect(options.sources["fake-key"] == "E2EE_RELAY_FAKE_KEY")
        #expect(options.sources["fake-timeout"] == "\(file) (\"fake-timeout\")")
        #expect(options.apnsTopics == ["com.example.app"])
        #expect(RelayServe.startLine(options, pushServices: services).contains("; Fake (key k1); 4 delivery workers"))

        func refusal(
            _ flags: [String: ConfigContent],
            _ environment: [String: String] = ["E2EE_RELAY_FAKE_KEY": "k1"],
            file: String? = nil,
            services: [any RelayPushServiceKind] = services
        ) -> String? {
            do {
                _ = try ServeOptions.resolve(
                    flags: flags,
                    environment: environment,
                    configFile: file,
                    pushServices: services
                )
                return nil
            } catch {
                return error.message
            }
        }
        #expect(refusal(Self.required, [:]) == "give --fake-key")
        var short = Self.required
        short["lease-seconds"] = .int(34)
        #expect(
            refusal(short, file: file) == "--lease-seconds must be at least 35 (5 s longer than the 30 s fake timeout)"
        )
        // The APNs kind's own checks still run beside it.
        var noTopic = Self.required
        noTopic["apns-topic"] = nil
        #expect(refusal(noTopic)?.hasPrefix("give --apns-topic") == true)
        // A value of the wrong type, and a key no service of this relay reads.
        try Data(#"{"fake-timeout": "soon"}"#.utf8).write(to: URL(fileURLWithPath: file))
        #expect(refusal(Self.required, file: file) == "\(file): \"fake-timeout\" must be a whole number")
        #expect(
            refusal(Self.required, file: file, services: [APNsServiceKind()])
                == "\(file): unknown key \"fake-timeout\" (the keys are the option names without dashes, e.g. "
                + "\"apns-key-id\")"
        )
    }

    @Test("the built relay registers the service's addresses, delivers through its deliverer and closes it once")
    func buildsAndDelivers() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await GatewayFixture.with { gateway in
            var options = try RelayBuilderTests.options(folder, gateway: gateway)
            options.serviceValues["fake-key"] = .string("k1")
            let fake = FakeKind()
            let relay = try await buildApplication(
                options,
                logger: Logger(label: "relay"),
                pushServices: [APNsServiceKind(), fake]
            )
            #expect(fake.events.withLock { $0 } == ["open"])
            let group = ServiceGroup(configuration: .init(services: [relay], logger: Logger(label: "group")))
            let running = Task { try await group.run() }
            let port = try await RelayBuilderTests.listeningPort(options)
            let now = UInt64(WallClock.system.nowMs)
            let bob = try TestUser.make("bob", devices: ["phone", "watch"], nowMs: now)
            let sealed = try bob.sealText(from: bob.device("phone"), to: "watch", padding: FakeServiceRules.padding)
            try await withClient("https://127.0.0.1:\(port)", ca: folder.file("tls/ca.pem")) { client in
                _ = try await client.publish(bob.list)
                try await client.registerPush(
                    userID: "bob",
                    deviceID: "watch",
                    address: RegisteredAddress(
                        push: PushAddress(service: FakeServiceRules.service, address: "tok-ABC"),
                        environment: nil
                    ),
                    signingKey: bob.device("watch").signingKey
                )
                let token = DeliveryToken()
                _ = try await client.setDeliveryTokens(
                    userID: "bob",
                    deviceID: "phone",
                    tokens: [token],
                    signingKey: bob.device("phone").signingKey
                )
                let response = try await client.submit(
                    userID: "bob",
                    pushes: [("watch", sealed.envelope)],
                    token: token
                )
                #expect(response.pushes.map(\.deviceID) == ["watch"])
                for _ in 0..<600 where fake.deliverer.deliveries.isEmpty {
                    try await Task.sleep(for: .milliseconds(50))
                }
                // The service reports the address gone: the next submit to it is refused in the service's name.
                fake.gone.withLock { $0 = true }
                _ = try await client.submit(userID: "bob", pushes: [("watch", sealed.envelope)], token: token)
                var refusal: RelayError?
                for _ in 0..<600 where refusal == nil {
                    try await Task.sleep(for: .milliseconds(50))
                    do throws(RelayError) {
                        _ = try await client.submit(userID: "bob", pushes: [("watch", sealed.envelope)], token: token)
                    } catch {
                        refusal = error
                    }
                }
                #expect(refusal?.code == .pushAddressUnregistered)
                #expect(
                    refusal?.message
                        == "fake reported device \"watch\"'s push address unregistered: leave it out until it registers again"
                )
            }
            await group.triggerGracefulShutdown()
            try await running.value
            let delivered = fake.deliverer.deliveries
            #expect(delivered.count >= 2)
            #expect(delivered.first?.address.push == PushAddress(service: FakeServiceRules.service, address: "tok-abc"))
            #expect(delivered.first?.envelope == sealed.envelope.serialized)
            #expect(fake.events.withLock { $0 } == ["open", "close"])
        }
    }

    @Test("a service that cannot open stops the start at setup, before the store; those opened before it are closed")
    func openFailure() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await GatewayFixture.with { gateway in
            let options = try RelayBuilderTests.options(folder, gateway: gateway)
            let first = FakeKind()
            var failing = FakeKind()
            failing.failOpen = true
            let error = await #expect(throws: RelayStartError.self) {
                _ = try await buildApplication(
                    options,
                    logger: Logger(label: "relay"),
                    pushServices: [APNsServiceKind(), first, failing]
                )
            }
            #expect(error?.step == .setup)
            #expect(error?.error.code == .configuration)
            #expect(error?.error.message == "the fake key is unreadable")
            #expect(first.events.withLock { $0 } == ["open", "close"])
            #expect(failing.events.withLock { $0 } == ["open"])
            #expect(!FileManager.default.fileExists(atPath: options.database))
        }
    }
}
