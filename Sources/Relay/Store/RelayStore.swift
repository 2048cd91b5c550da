public import RelayClient

/// The relay's persistence: device lists, push addresses, delivery tokens, nonces, idempotency records and the
/// push queue. Two implementations run the same tests: ``SQLiteRelayStore`` (embedded, one process) and
/// ``PostgresRelayStore`` (shared by several relay instances).
///
/// Every method either commits all its writes or none. Methods throw ``RelayError`` with code
/// `storage-unavailable` when the database fails; the API answers 503 and has stored nothing.
public protocol RelayStore: Sendable {
    /// Creates the schema if missing.
    func migrate() async throws(RelayError)

    /// Checks the database answers; a store that knows its last write failed for lack of space throws
    /// `storage-full` until a write succeeds again.
    func ping() async throws(RelayError)

    /// The stored list of a user.
    func list(userID: String) async throws(RelayError) -> StoredList?

    /// Stores a verified list, replacing the user's devices; enforces the relay-side pin (docs/RELAY.md).
    ///
    /// - Returns: false when the identical list is already stored.
    /// - Throws: `signing-key-changed`, `list-rollback`, `list-version-reused`.
    func publish(_ list: NewList, nowMs: Int64) async throws(RelayError) -> Bool

    /// Each device of the user with its signing key and push state, in list order.
    func devices(userID: String) async throws(RelayError) -> [StoredDevice]

    /// Records a nonce until `expiresAtMs`; false when it is already recorded (a replay).
    func consumeNonce(_ nonce: [UInt8], expiresAtMs: Int64, nowMs: Int64) async throws(RelayError) -> Bool

    /// Sets (or replaces) a device's push address and clears its unregistered mark.
    ///
    /// - Throws: `unknown-device` if the device is no longer in the user's list.
    func registerPush(
        userID: String,
        deviceID: String,
        address: RegisteredAddress,
        nowMs: Int64
    ) async throws(RelayError)

    /// Replaces the user's delivery token hashes.
    func replaceDeliveryTokens(userID: String, hashes: [[UInt8]], nowMs: Int64) async throws(RelayError)

    /// Whether `hash` is a delivery token hash of `userID`.
    func isDeliveryToken(_ hash: [UInt8], of userID: String) async throws(RelayError) -> Bool

    /// What a submit is checked against, in one read (one round trip to the queue or the database): whether the
    /// user has a stored list, whether `tokenHash` is one of the user's delivery token hashes, and the user's devices.
    func submitContext(userID: String, tokenHash: [UInt8]?) async throws(RelayError) -> SubmitContext

    /// Enqueues one submit in one transaction, or answers the earlier outcome of the same idempotency key.
    ///
    /// A submit with a ``NewSubmit/lease`` stores its pushes leased to that owner (attempt 1) instead of queued; a
    /// duplicate stores nothing.
    ///
    /// - Throws: `idempotency-key-reused` when the key was used with other pushes.
    func enqueue(_ submit: NewSubmit, nowMs: Int64) async throws(RelayError) -> EnqueueOutcome

    /// Leases up to `limit` due pushes to `owner` until `nowMs + leaseMs`.
    func lease(owner: String, limit: Int, nowMs: Int64, leaseMs: Int64) async throws(RelayError) -> [LeasedPush]

    /// Records the outcomes of leased pushes, all in one transaction (at most one commit per delivered batch: a store
    /// may record them in a transaction it shares with other writes, as the SQLite store's group commit does).
    func complete(
        _ completions: [Completion],
        owner: String,
        nowMs: Int64
    ) async throws(RelayError)
        -> [CompletionResult]

    /// Counts of pushes by state.
    func counts() async throws(RelayError) -> [PushState: Int]

    /// The state of one push (tests, operators).
    func push(_ pushID: String) async throws(RelayError) -> PushRecord?

    /// Enqueue-to-delivered times, in ms, of every delivered push still recorded (operators, measurements).
    func deliveredLatenciesMs() async throws(RelayError) -> [Int64]

    /// Deletes expired nonces and idempotency records.
    func purge(nowMs: Int64) async throws(RelayError)
}

/// A list to store: its identity fields and the exact bytes the user signed.
public struct NewList: Sendable {
    public var userID: String
    public var userSigningKey: [UInt8]
    public var listVersion: UInt64
    public var digest: [UInt8]
    public var json: [UInt8]
    /// (device id, device signing key) in list order.
    public var devices: [(deviceID: String, signingKey: [UInt8])]
}

/// A stored list.
public struct StoredList: Sendable, Hashable {
    public var userID: String
    public var userSigningKey: [UInt8]
    public var listVersion: UInt64
    public var digest: [UInt8]
    public var json: [UInt8]
}

/// A device of a stored list, with its push state.
public struct StoredDevice: Sendable, Hashable {
    public var deviceID: String
    public var signingKey: [UInt8]
    public var address: RegisteredAddress?
    /// When the address stopped working: APNs answered 410, or refused it for good (``failedReason``).
    public var unregisteredAtMs: Int64?
    /// APNs' reason when it refused the address for good (400 `BadDeviceToken`, `DeviceTokenNotForTopic`,
    /// `TopicDisallowed`), or the relay's (`topic-not-allowed`); nil for a 410.
    public var failedReason: String?

    public init(
        deviceID: String,
        signingKey: [UInt8],
        address: RegisteredAddress?,
        unregisteredAtMs: Int64?,
        failedReason: String? = nil
    ) {
        self.deviceID = deviceID
        self.signingKey = signingKey
        self.address = address
        self.unregisteredAtMs = unregisteredAtMs
        self.failedReason = failedReason
    }

    public var pushState: RelayAPI.PushState {
        guard self.address != nil else { return .none }
        guard self.unregisteredAtMs != nil else { return .active }
        return self.failedReason == nil ? .unregistered : .failed
    }
}

/// One submit to enqueue.
public struct NewSubmit: Sendable {
    public var userID: String
    public var idempotencyKey: String
    /// SHA-256 of the canonical pushes (device ids and envelopes, in order).
    public var requestDigest: [UInt8]
    /// (device id, new push id, envelope) in request order: the envelope as submitted, which the push service's
    /// deliverer frames at delivery.
    public var pushes: [(deviceID: String, pushID: String, envelope: [UInt8])]
    /// When set, the pushes are stored already leased (attempt 1) to a delivery worker of this process, which the
    /// submit hands them to once the commit is durable (``DeliveryHandoff``); nil stores them queued, for a lease.
    public var lease: SubmitLease?

    public init(
        userID: String,
        idempotencyKey: String,
        requestDigest: [UInt8],
        pushes: [(deviceID: String, pushID: String, envelope: [UInt8])],
        lease: SubmitLease? = nil
    ) {
        self.userID = userID
        self.idempotencyKey = idempotencyKey
        self.requestDigest = requestDigest
        self.pushes = pushes
        self.lease = lease
    }
}

/// A lease a submit's pushes are stored under: the same as one ``RelayStore/lease(owner:limit:nowMs:leaseMs:)``
/// would take at the commit (state `leased`, attempt 1, this owner, this expiry), so a crash before delivery leaves
/// them to be leased again when it expires, as any lease.
public struct SubmitLease: Sendable, Hashable {
    public var owner: String
    public var expiresAtMs: Int64

    public init(owner: String, expiresAtMs: Int64) {
        self.owner = owner
        self.expiresAtMs = expiresAtMs
    }
}

/// What ``RelayStore/submitContext(userID:tokenHash:)`` read.
public struct SubmitContext: Sendable, Hashable {
    public var hasList: Bool
    /// false when no token hash was given.
    public var tokenIsValid: Bool
    /// The user's devices in list order (empty without a list).
    public var devices: [StoredDevice]
    /// How many delivery tokens the user has (each token's share of the user's rate is one of these).
    public var tokenCount: Int

    public init(hasList: Bool, tokenIsValid: Bool, devices: [StoredDevice], tokenCount: Int = 0) {
        self.hasList = hasList
        self.tokenIsValid = tokenIsValid
        self.devices = devices
        self.tokenCount = tokenCount
    }
}

/// What ``RelayStore/enqueue(_:nowMs:)`` did.
public struct EnqueueOutcome: Sendable, Hashable {
    public var pushes: [RelayAPI.AcceptedPush]
    public var duplicate: Bool
}

/// A push leased for delivery, joined with its device's current address.
public struct LeasedPush: Sendable, Hashable {
    public var pushID: String
    public var userID: String
    public var deviceID: String
    /// The envelope as submitted.
    public var envelope: [UInt8]
    public var attempts: Int
    public var enqueuedAtMs: Int64
    /// nil when the device has no active address any more (removed, or unregistered since).
    public var address: RegisteredAddress?
}

/// The states of a push (docs/RELAY.md "Queue and delivery").
public enum PushState: String, Sendable, Hashable, CaseIterable {
    case queued, leased, delivered, failed, unregistered, removed
}

/// The outcome a worker records.
public enum PushOutcome: Sendable, Hashable {
    /// The push service accepted the push (`status`: its status code when it has one, APNs' 200).
    case delivered(status: Int?)
    /// Retry at `retryAtMs` (429, 5xx, timeout, connection).
    case retry(retryAtMs: Int64, status: Int?, reason: String?)
    /// Not retried: any other APNs status, or attempts exhausted.
    case failed(status: Int?, reason: String)
    /// 410: the push address `address` (the service's address text) is dead since `atMs`.
    case unregistered(atMs: Int64, address: String)
    /// The push service refused the push address `address` for good (`status`, `reason`: 400 `BadDeviceToken`,
    /// `DeviceTokenNotForTopic`, `TopicDisallowed`), or the relay does not deliver for its topic: the push fails and
    /// the address is marked failed with the reason until the device registers again.
    case addressRefused(atMs: Int64, address: String, status: Int?, reason: String)
    /// The device has no usable address: dropped.
    case removed
}

/// One outcome to record.
public struct Completion: Sendable, Hashable {
    public var pushID: String
    public var outcome: PushOutcome
    /// The lease's attempt number (``LeasedPush/attempts``): with the owner it names the lease, so that a completion
    /// recorded again by the same lease (its first commit's answer was lost) is not taken for another lease's.
    public var attempt: Int?

    public init(pushID: String, outcome: PushOutcome, attempt: Int? = nil) {
        self.pushID = pushID
        self.outcome = outcome
        self.attempt = attempt
    }
}

extension RelayStore {
    /// Records the outcome of one leased push.
    public func complete(
        _ pushID: String,
        owner: String,
        outcome: PushOutcome,
        attempt: Int? = nil,
        nowMs: Int64
    ) async throws(RelayError)
        -> CompletionResult
    {
        try await self.complete(
            [Completion(pushID: pushID, outcome: outcome, attempt: attempt)],
            owner: owner,
            nowMs: nowMs
        )[0]
    }
}

/// What ``RelayStore/complete(_:owner:nowMs:)`` found for each push.
public enum CompletionResult: Sendable, Hashable {
    /// The outcome was recorded (or had been, by this same lease: a completion sent again after its commit's answer
    /// was lost, as when PostgreSQL drops the connection right after a commit).
    case recorded
    /// The push had already been completed by another lease (the lease expired and it was delivered twice).
    case alreadyCompleted
}

/// One push as stored.
public struct PushRecord: Sendable, Hashable {
    public var pushID: String
    public var userID: String
    public var deviceID: String
    public var state: PushState
    public var attempts: Int
    public var completions: Int
    /// The push service's status code at the last attempt (APNs' HTTP status), when it answered.
    public var serviceStatus: Int?
    /// The push service's reason at the last attempt (APNs' `reason`), or the relay's own (`unsupported-push-service`,
    /// `gave up after …`).
    public var serviceReason: String?
}
