import E2EECore
import Foundation
import Locking
import Logging
import PushTransport
import TestSupport
import Testing

@testable import Relay

/// A temporary folder removed by ``cleanup()``.
struct TemporaryFolder: Sendable {
    let path: String

    init() throws {
        let path = NSTemporaryDirectory() + "relay-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        self.path = path
    }

    func file(_ name: String) -> String { (self.path as NSString).appendingPathComponent(name) }

    func cleanup() { try? FileManager.default.removeItem(atPath: self.path) }
}

/// A user with devices: the first holds the user key; the list signs every device in.
struct TestUser: Sendable {
    var devices: [Identity]
    var list: DeviceList
    var userID: String { self.list.userID }

    /// `userID` with devices named `deviceIDs` (the first signs the others in).
    static func make(
        _ userID: String,
        devices deviceIDs: [String] = ["phone", "tablet"],
        nowMs: UInt64 = 1_800_000_000_000
    )
        throws -> TestUser
    {
        let first = try Identity.generate(
            userID: userID,
            displayName: userID.capitalized,
            deviceID: deviceIDs[0],
            nowMs: nowMs
        )
        var list = try DeviceList.create(for: first, push: nil, nowMs: nowMs)
        var devices = [first]
        for deviceID in deviceIDs.dropFirst() {
            let device = try Identity.generate(
                userID: userID,
                displayName: userID.capitalized,
                deviceID: deviceID,
                withUserKey: false,
                nowMs: nowMs
            )
            list = try list.signingIn(
                try DeviceRequest.make(for: device, push: nil, nowMs: nowMs),
                signer: first,
                nowMs: nowMs
            )
            devices.append(device)
        }
        return TestUser(devices: devices, list: list)
    }

    func device(_ deviceID: String) -> Identity { self.devices.first { $0.deviceID == deviceID }! }

    /// A push address with a token derived from the device id (64 hex digits).
    static func address(
        _ deviceID: String,
        topic: String = "com.example.app",
        environment: String = "development"
    )
        -> RegisteredAddress
    {
        let hex = Hex.encode(Array(deviceID.utf8))
        let token = String((hex + String(repeating: "0", count: 64)).prefix(64))
        return RegisteredAddress(apns: APNsAddress(topic: topic, deviceToken: token), environment: environment)
    }

    /// The APNs token of ``address(_:topic:environment:)``.
    static func token(_ deviceID: String) -> String { address(deviceID).push.apns!.deviceToken }

    /// A text from `sender` sealed to `deviceID`'s current key, padded by `padding` (APNs' by default).
    func sealText(
        from sender: Identity,
        to deviceID: String,
        body: String = "hello",
        nowMs: UInt64 = 1_800_000_000_000,
        padding: PaddingTable = APNsAlertTransport.padding
    )
        throws -> SealedPush
    {
        let device = self.list.device(named: deviceID)!
        let message = InnerMessage(
            messageID: .random(),
            sentAtMs: nowMs,
            senderUserID: sender.userID,
            senderSigningKeyID: sender.signingKey.publicKey.keyID,
            content: .text(TextMessage(threadID: "t", title: "Hi", body: body))
        )
        return try PushPayload.seal(
            message,
            to: device.currentKey.publicKey,
            signingKey: sender.signingKey,
            padding: padding
        )
    }
}

/// A relay service over a fresh SQLite store, with a manual clock.
struct ServiceFixture: Sendable {
    let folder: TemporaryFolder
    let store: SQLiteRelayStore
    let metrics: RelayMetrics
    let service: RelayService
    let clock: TestClock

    /// - Parameter clockStart: the relay's clock at start (ms since 1970); a process that signs with the wall clock
    ///   (`e2ee-send relay register`) needs the wall clock here.
    init(
        policy: RelayService.Policy = RelayService.Policy(),
        services: [any PushServiceRules] = [APNsRules()],
        logger: Logger = Logger(label: "relay-test"),
        clockStart: Int64 = 1_800_000_000_000,
        doorbell: Doorbell? = nil
    ) async throws {
        self.folder = try TemporaryFolder()
        self.store = try SQLiteRelayStore(path: self.folder.file("relay.sqlite"))
        try await self.store.migrate()
        self.metrics = RelayMetrics()
        self.clock = TestClock(ms: clockStart)
        self.service = try RelayService(
            store: self.store,
            metrics: self.metrics,
            policy: policy,
            services: services,
            clock: self.clock.wallClock,
            doorbell: doorbell,
            logger: logger
        )
    }

    /// Runs `body` with a fresh fixture and cleans it up however `body` ends.
    static func with<T>(
        policy: RelayService.Policy = RelayService.Policy(),
        logger: Logger = Logger(label: "relay-test"),
        doorbell: Doorbell? = nil,
        _ body: (ServiceFixture) async throws -> T
    ) async throws -> T {
        let fixture = try await ServiceFixture(policy: policy, logger: logger, doorbell: doorbell)
        return try await withCleanup(fixture, { await $0.cleanup() }, body)
    }

    /// Publishes `user`'s list, registers every device's address and gives the user `token`.
    func enroll(_ user: TestUser, token: DeliveryToken) async throws {
        _ = try await self.service.publish(userID: user.userID, body: user.list.jsonData())
        for device in user.devices {
            try await self.register(user, device.deviceID, TestUser.address(device.deviceID))
        }
        let set = try RelayAuthorization.signedTokenSet(
            userID: user.userID,
            deviceID: user.devices[0].deviceID,
            tokens: [token],
            signingKey: user.devices[0].signingKey,
            nowMs: UInt64(self.clock.nowMs)
        )
        _ = try await self.service.replaceTokens(userID: user.userID, body: RelayRouter.encode(set))
    }

    /// Registers `address` for `user`'s device `deviceID`, signed by that device as the relay's API requires.
    func register(_ user: TestUser, _ deviceID: String, _ address: RegisteredAddress) async throws {
        let registration = try RelayAuthorization.signedRegistration(
            userID: user.userID,
            deviceID: deviceID,
            address: address,
            signingKey: user.device(deviceID).signingKey,
            nowMs: UInt64(self.clock.nowMs)
        )
        try await self.service.registerPush(
            userID: user.userID,
            deviceID: deviceID,
            body: RelayRouter.encode(registration)
        )
    }

    /// The number of pushes in the queue in any state.
    func pushCount() async throws -> Int {
        try await self.store.counts().values.reduce(0, +)
    }

    func cleanup() async {
        await self.store.close()
        self.folder.cleanup()
    }
}

/// A submit body for (device id, sealed push) pairs.
func submitBody(_ pushes: [(String, SealedPush)]) -> [UInt8] {
    RelayRouter.encode(
        RelayAPI.SubmitRequest(
            pushes: pushes.map {
                RelayAPI.SubmitPush(deviceID: $0.0, envelope: Data($0.1.envelope.serialized).base64EncodedString())
            }
        )
    )
}

/// Runs `body` and returns the code of the RelayError it throws (nil when it does not throw).
func relayErrorCode(_ body: () async throws -> Void) async -> RelayError.Code? {
    do {
        try await body()
        return nil
    } catch let error as RelayError {
        return error.code
    } catch {
        Issue.record("expected a RelayError, got \(error)")
        return nil
    }
}

/// Polls `done` until it holds or `tries` polls have passed (a bounded wait for another process or task; the test
/// then asserts on the outcome, never on the time it took).
func waitUntil(tries: Int, every interval: Duration, _ done: () async throws -> Bool) async throws {
    for _ in 0..<tries {
        if try await done() { return }
        try await Task.sleep(for: interval)
    }
}

/// Runs `body` with `value`, then `cleanup(value)` however `body` ends (returned or threw): a client, gateway or
/// fixture made in a test is shut down on every path, never left to a deinit that traps.
func withCleanup<R, T>(
    _ value: R,
    _ cleanup: (R) async -> Void,
    _ body: (R) async throws -> T
) async throws -> T {
    let result: T
    do {
        result = try await body(value)
    } catch {
        await cleanup(value)
        throw error
    }
    await cleanup(value)
    return result
}
