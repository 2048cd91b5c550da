import Crypto
public import E2EECore
import Foundation
import Locking
public import Logging
import PushTransport
public import RelayClient

/// The relay's API decisions, independent of HTTP: every input gets one outcome, a value or a ``RelayError`` with
/// a reason code, and a refused input changes nothing in the store.
public final class RelayService: Sendable {
    /// Limits and windows.
    public struct Policy: Sendable {
        /// Largest request body of a submit.
        public var maximumSubmitBytes = 96 * 1024
        /// Largest body of every other request.
        public var maximumBodyBytes = 64 * 1024
        /// Per recipient user: pushes a minute and burst.
        public var recipientRatePerMinute: Double = 120
        public var recipientBurst: Double = 60
        /// Per delivery token: pushes a minute and burst.
        public var tokenRatePerMinute: Double = 60
        public var tokenBurst: Double = 30

        public init() {}
    }

    /// The most pushes in one submit: one per device of a list.
    public static let maximumPushes = DeviceList.maximumDevices
    /// The most delivery tokens a user holds at once.
    public static let maximumTokens = RelayAuthorization.maximumTokens

    let store: any RelayStore
    let metrics: RelayMetrics
    let policy: Policy
    /// The rules of each push service this relay delivers through, by service.
    let services: [PushService: any PushServiceRules]
    /// The services' padding tables, without repeats, in the order given: an envelope must fit one of them.
    let paddings: [PaddingTable]
    /// Now, for signatures' freshness, rate limits and what the store records (a test's ``WallClock`` moves it by
    /// hand).
    let clock: WallClock
    let logger: Logger
    /// Rung after pushes are queued (the delivery workers' ``DeliveryService/doorbell``).
    let doorbell: Doorbell?
    /// Where a submit's pushes go once committed, leased already, when the delivery workers have room
    /// (``DeliveryService/handoff``); without it, or without room, they are queued and the doorbell rings.
    let handoff: DeliveryHandoff?
    private let recipientLimiter: RateLimiter
    private let tokenLimiter: RateLimiter
    // A lock, not Synchronization's `Atomic`: Swift 6.3.1's optimizer crashed on `RelayServe.run` (now
    // `buildApplication`) ("Found ownership error", CopyPropagation at the inlined `drop_deinit` of an `Atomic<Bool>`
    // stored in this class) in release builds.
    private let isDraining = PThreadMutex<Bool>(false)

    /// Whether the relay is shutting down (readiness answers `draining`); requests are still answered meanwhile.
    public var draining: Bool { self.isDraining.withLock { $0 } }

    /// Marks the relay as shutting down: from now on readiness answers 503 `draining`, so that load balancers send new
    /// clients elsewhere while the requests already read are answered.
    public func startDraining() { self.isDraining.withLock { $0 = true } }

    /// - Parameters:
    ///   - store: Where everything is kept.
    ///   - metrics: The relay's metrics.
    ///   - policy: Limits (bursts must hold a whole submit of ``maximumPushes``).
    ///   - services: The rules of each push service this relay delivers through (at least one, one per service);
    ///     the default is APNs for any topic in both environments (tests of the API alone).
    ///   - clock: The wall clock (a test's moves by hand).
    ///   - doorbell: Rung after a submit's pushes are queued, so that idle delivery workers lease them at once
    ///     (the handoff's when nil).
    ///   - handoff: The delivery workers of this process, which take a submit's pushes without a lease of their own
    ///     when they have room (``DeliveryHandoff``).
    ///   - logger: Gets ids, codes and counts; never tokens, envelopes or addresses.
    /// - Throws: `configuration` when a burst is below ``maximumPushes``.
    public init(
        store: any RelayStore,
        metrics: RelayMetrics,
        policy: Policy = Policy(),
        services: [any PushServiceRules] = [APNsRules()],
        clock: WallClock = .system,
        doorbell: Doorbell? = nil,
        handoff: DeliveryHandoff? = nil,
        logger: Logger
    ) throws(RelayError) {
        guard !services.isEmpty, Set(services.map(\.service)).count == services.count else {
            throw RelayError(.configuration, "the relay needs the rules of each push service once, and at least one")
        }
        guard policy.recipientBurst >= Double(Self.maximumPushes), policy.tokenBurst >= Double(Self.maximumPushes)
        else {
            throw RelayError(
                .configuration,
                "rate-limit bursts must be at least \(Self.maximumPushes) (one submit to a user with 16 devices)"
            )
        }
        self.store = store
        self.metrics = metrics
        self.policy = policy
        self.services = Dictionary(uniqueKeysWithValues: services.map { ($0.service, $0) })
        var paddings: [PaddingTable] = []
        for padding in services.map(\.padding) where !paddings.contains(padding) { paddings.append(padding) }
        self.paddings = paddings
        self.clock = clock
        self.doorbell = doorbell ?? handoff?.doorbell
        self.handoff = handoff
        self.logger = logger
        self.recipientLimiter = RateLimiter(
            limit: .init(ratePerMinute: policy.recipientRatePerMinute, burst: policy.recipientBurst)
        )
        self.tokenLimiter = RateLimiter(
            limit: .init(ratePerMinute: policy.tokenRatePerMinute, burst: policy.tokenBurst)
        )
    }

    // MARK: device lists

    /// Verifies and stores a device list (PROTOCOL §11.4 + the relay-side pin).
    public func publish(userID: String, body: [UInt8]) async throws(RelayError) -> RelayAPI.PublishResponse {
        try Identifiers.checkUserID(userID)
        let list: DeviceList
        do throws(E2EEError) {
            list = try DeviceList.parse(body)
        } catch {
            throw RelayError(.badDeviceList, "the device list does not verify (\(error.code)): \(error.message)")
        }
        guard list.userID == userID else {
            throw RelayError(
                .userMismatch,
                "the list is for user \"\(list.userID)\" but was published to \"\(userID)\": use the list's own user id"
            )
        }
        let stored = try await self.store.publish(
            NewList(
                userID: userID,
                userSigningKey: list.userSigningKey.rawRepresentation,
                listVersion: list.listVersion,
                digest: list.digest,
                json: body,
                devices: list.devices.map { ($0.deviceID, $0.signingKey.rawRepresentation) }
            ),
            nowMs: self.clock.nowMs
        )
        self.logger.info(
            "device list published",
            metadata: ["user": "\(userID)", "list_version": "\(list.listVersion)", "stored": "\(stored)"]
        )
        return RelayAPI.PublishResponse(listVersion: list.listVersion, stored: stored)
    }

    /// The stored list bytes and each device's push state.
    public func fetch(userID: String) async throws(RelayError) -> (list: [UInt8], devices: [RelayAPI.DeviceState]) {
        try Identifiers.checkUserID(userID)
        guard let list = try await self.store.list(userID: userID) else {
            throw RelayError(.unknownUser, "no device list is published for user \"\(userID)\"")
        }
        let devices = try await self.store.devices(userID: userID).map {
            RelayAPI.DeviceState(
                deviceID: $0.deviceID,
                push: $0.pushState,
                unregisteredAtMs: $0.unregisteredAtMs,
                failedReason: $0.failedReason
            )
        }
        return (list.json, devices)
    }

    // MARK: device-signed requests

    /// Registers a device's push address (docs/RELAY.md "Registering a push address").
    public func registerPush(userID: String, deviceID: String, body: [UInt8]) async throws(RelayError) {
        try Identifiers.checkUserID(userID)
        try Identifiers.checkDeviceID(deviceID)
        let registration = try Self.decode(RelayAPI.PushRegistration.self, body)
        let received = RegisteredAddress(
            push: PushAddress(service: PushService(rawValue: registration.service), address: registration.address),
            environment: registration.environment
        )
        try Self.checkAddress(received)
        // An address of a service this relay has no deliverer for is refused here rather than stored and failed at
        // every push; the service's own rules check the rest.
        guard let rules = self.services[received.push.service] else {
            throw RelayError(
                .unsupportedPushService,
                "this relay delivers through \(self.services.keys.map(\.rawValue).sorted().joined(separator: ", ")) "
                    + "only; service \"\(received.push.service)\" has no deliverer here"
            )
        }
        let address = try rules.registration(received)
        let nonce = try Self.nonce(registration.nonce)
        let signature = try Self.signature(registration.signature)
        let device = try await self.device(userID: userID, deviceID: deviceID)
        let message = RelayAuthorization.registerMessage(
            userID: userID,
            deviceID: deviceID,
            registration: registration,
            nonce: nonce
        )
        try await self.authorize(
            message,
            signature: signature,
            by: device,
            timestampMs: registration.timestampMs,
            nonce: nonce
        )
        try await self.store.registerPush(userID: userID, deviceID: deviceID, address: address, nowMs: self.clock.nowMs)
        self.logger.info("push address registered", metadata: ["user": "\(userID)", "device": "\(deviceID)"])
    }

    /// Replaces a user's delivery tokens (docs/RELAY.md "Delivery tokens").
    public func replaceTokens(userID: String, body: [UInt8]) async throws(RelayError) -> Int {
        try Identifiers.checkUserID(userID)
        let set = try Self.decode(RelayAPI.DeliveryTokenSet.self, body)
        try Identifiers.checkDeviceID(set.deviceID)
        guard set.tokenSHA256.count <= Self.maximumTokens else {
            throw RelayError(
                .badTokenSet,
                "at most \(Self.maximumTokens) delivery tokens per user; got \(set.tokenSHA256.count)"
            )
        }
        var hashes: [[UInt8]] = []
        for hex in set.tokenSHA256 {
            guard hex.utf8.count == 64, let hash = Hex.decode(hex) else {
                throw RelayError(.badTokenSet, "each token_sha256 is 64 hex digits (the SHA-256 of a 32-byte token)")
            }
            hashes.append(hash)
        }
        guard Set(hashes).count == hashes.count else {
            throw RelayError(.badTokenSet, "a token hash appears twice: list each token once")
        }
        let nonce = try Self.nonce(set.nonce)
        let signature = try Self.signature(set.signature)
        let device = try await self.device(userID: userID, deviceID: set.deviceID)
        let message = RelayAuthorization.tokensMessage(userID: userID, set: set, hashes: hashes, nonce: nonce)
        try await self.authorize(message, signature: signature, by: device, timestampMs: set.timestampMs, nonce: nonce)
        try await self.store.replaceDeliveryTokens(userID: userID, hashes: hashes, nowMs: self.clock.nowMs)
        self.logger.info("delivery tokens replaced", metadata: ["user": "\(userID)", "count": "\(hashes.count)"])
        return hashes.count
    }

    private func device(userID: String, deviceID: String) async throws(RelayError) -> StoredDevice {
        guard try await self.store.list(userID: userID) != nil else {
            throw RelayError(.unknownUser, "no device list is published for user \"\(userID)\": publish it first")
        }
        guard let device = try await self.store.devices(userID: userID).first(where: { $0.deviceID == deviceID }) else {
            throw RelayError(
                .unknownDevice,
                "device \"\(deviceID)\" is not in user \"\(userID)\"'s list: sign it in and publish the list first"
            )
        }
        return device
    }

    private func authorize(
        _ message: [UInt8],
        signature: [UInt8],
        by device: StoredDevice,
        timestampMs: UInt64,
        nonce: [UInt8]
    ) async throws(RelayError) {
        guard let key = try? SigningPublicKey(rawRepresentation: device.signingKey),
            key.isValidSignature(signature, for: message)
        else {
            throw RelayError(
                .badAuthorization,
                "the signature does not verify under device \"\(device.deviceID)\"'s signing key in the stored list"
            )
        }
        let now = self.clock.nowMs
        guard timestampMs <= UInt64(Int64.max), abs(Int64(timestampMs) - now) <= RelayAuthorization.window else {
            throw RelayError(
                .staleAuthorization,
                "timestamp_ms is more than 5 minutes from the relay's clock: check the device clock and sign again"
            )
        }
        guard try await self.store.consumeNonce(nonce, expiresAtMs: now + RelayAuthorization.nonceRetention, nowMs: now)
        else {
            throw RelayError(.replayedAuthorization, "this authorisation was already used: sign a new request")
        }
    }

    // MARK: submits

    /// Validates and enqueues a submit; 202 follows the returned value (the commit is durable).
    ///
    /// - Parameters:
    ///   - userID: The recipient.
    ///   - authorization: The `Authorization` header, if any.
    ///   - idempotencyKey: The `Idempotency-Key` header, if any.
    ///   - body: The JSON body (its size was checked by the HTTP layer).
    ///   - requestID: Names the submit in the logs (and in the answer's `X-Request-Id`), nothing else.
    public func submit(
        userID: String,
        authorization: String?,
        idempotencyKey: String?,
        body: [UInt8],
        requestID: String = RelayService.newRequestID()
    ) async throws(RelayError) -> RelayAPI.SubmitResponse {
        do throws(RelayError) {
            let response = try await self.checkedSubmit(
                userID: userID,
                authorization: authorization,
                idempotencyKey: idempotencyKey,
                body: body
            )
            self.metrics.submit(response.duplicate ? "duplicate" : "accepted")
            // At info, with no identity: which user, device or token a submit was for stays out of the logs.
            self.logger.info(
                "submit accepted",
                metadata: [
                    "request_id": "\(requestID)", "pushes": "\(response.pushes.count)",
                    "duplicate": "\(response.duplicate)",
                ]
            )
            return response
        } catch {
            let outcome =
                switch error.code {
                case .storageUnavailable, .storageFull: error.code.rawValue
                default: "refused"
                }
            self.metrics.submit(outcome)
            self.logger.info(
                "submit refused",
                metadata: ["request_id": "\(requestID)", "error": "\(error.code.rawValue)"]
            )
            throw error
        }
    }

    /// A new request id: 16 hex digits, random.
    public static func newRequestID() -> String {
        RandomID.hex8()
    }

    private func checkedSubmit(
        userID: String,
        authorization: String?,
        idempotencyKey: String?,
        body: [UInt8]
    ) async throws(RelayError) -> RelayAPI.SubmitResponse {
        try Identifiers.checkUserID(userID)
        // The body as senders write it is read in one pass; any other layout goes to JSONDecoder.
        let request: RelayAPI.SubmitRequest
        if let read = RelayJSON.decodeSubmitRequest(body) {
            request = read
        } else {
            request = try Self.decode(RelayAPI.SubmitRequest.self, body)
        }
        guard let idempotencyKey else {
            throw RelayError(
                .missingIdempotencyKey,
                "send an Idempotency-Key header (a new UUID per submit, the same one when retrying it)"
            )
        }
        try Identifiers.checkIdempotencyKey(idempotencyKey)
        guard (1...Self.maximumPushes).contains(request.pushes.count) else {
            throw RelayError(
                .badPushCount,
                "a submit carries 1 to \(Self.maximumPushes) pushes; got \(request.pushes.count)"
            )
        }
        var seen = Set<String>()
        var envelopes: [[UInt8]] = []
        var digest = SHA256()
        for (index, push) in request.pushes.enumerated() {
            try Identifiers.checkDeviceID(push.deviceID)
            guard seen.insert(push.deviceID).inserted else {
                throw RelayError(.duplicateDevice, "device \"\(push.deviceID)\" appears twice: one envelope per device")
            }
            guard let bytes = CanonicalBase64.decode(push.envelope) else {
                throw RelayError(.malformedEnvelope, "pushes[\(index)].envelope is not canonical base64")
            }
            let envelope = try self.envelope(bytes, index: index)
            // The queue keeps the envelope; the push service's deliverer frames it at delivery.
            envelopes.append(envelope.serialized)
            digest.update(data: Array(push.deviceID.utf8))
            digest.update(data: [0])
            digest.update(data: bytes)
        }

        // One read for everything the checks below need; the refusals keep their order.
        let token = Self.parseTokenHash(authorization)
        let context = try await self.store.submitContext(userID: userID, tokenHash: try? token?.get())
        guard context.hasList else {
            throw RelayError(.unknownUser, "no device list is published for user \"\(userID)\"")
        }
        let tokenHash = try Self.checkToken(token, valid: context.tokenIsValid)
        let cost = Double(request.pushes.count)
        let now = self.clock.nowMs
        let tokenLimit = self.tokenShare(tokens: context.tokenCount)
        let recipientWait = self.recipientLimiter.wait(for: userID, cost: cost, nowMs: now)
        let tokenKey = Hex.encode(tokenHash)
        let tokenWait = self.tokenLimiter.wait(for: tokenKey, cost: cost, nowMs: now, limit: tokenLimit)
        if recipientWait > 0 || tokenWait > 0 {
            let scope = recipientWait >= tokenWait ? "recipient" : "token"
            self.metrics.rateLimited(scope: scope)
            throw RelayError(
                .rateLimited,
                "too many pushes for this \(scope == "recipient" ? "recipient" : "delivery token"): retry after the Retry-After seconds",
                retryAfterSeconds: max(recipientWait, tokenWait)
            )
        }

        let devices = context.devices
        for (index, push) in request.pushes.enumerated() {
            guard let device = devices.first(where: { $0.deviceID == push.deviceID }) else {
                throw RelayError(
                    .unknownDevice,
                    "device \"\(push.deviceID)\" is not in the user's list: fetch the list again and seal to its devices"
                )
            }
            switch device.pushState {
            case .active:
                try self.checkPadding(of: push, envelope: envelopes[index], to: device)
            case .none:
                throw RelayError(
                    .noPushAddress,
                    "device \"\(push.deviceID)\" has no push address registered: leave it out (the list fetch shows it)"
                )
            case .unregistered:
                throw RelayError(
                    .pushAddressUnregistered,
                    "\(self.serviceName(of: device)) reported device \"\(push.deviceID)\"'s push address unregistered: "
                        + "leave it out until it registers again"
                )
            case .failed:
                throw RelayError(
                    .pushAddressFailed,
                    "\(self.serviceName(of: device)) refused device \"\(push.deviceID)\"'s push address "
                        + "(\(device.failedReason ?? "refused")): leave it out until it registers again"
                )
            }
        }
        let submit = NewSubmit(
            userID: userID,
            idempotencyKey: idempotencyKey,
            requestDigest: Array(digest.finalize()),
            pushes: zip(request.pushes, envelopes).map { ($0.0.deviceID, RandomID.uuidText(), $0.1) }
        )
        let outcome = try await self.enqueue(submit, to: devices, nowMs: now)
        if outcome.duplicate {
            self.metrics.duplicateSubmits.increment()
        } else {
            self.recipientLimiter.take(userID, cost: cost, nowMs: now)
            self.tokenLimiter.take(tokenKey, cost: cost, nowMs: now, limit: tokenLimit)
            self.metrics.pushesAccepted.increment(by: Int64(outcome.pushes.count))
        }
        self.logger.debug(
            "submit queued",
            metadata: ["user": "\(userID)", "pushes": "\(outcome.pushes.count)", "duplicate": "\(outcome.duplicate)"]
        )
        return RelayAPI.SubmitResponse(pushes: outcome.pushes, duplicate: outcome.duplicate)
    }

    /// Commits a checked submit: leased to this process's delivery workers and handed to them when they have room,
    /// else queued with the doorbell rung.
    private func enqueue(
        _ submit: NewSubmit,
        to devices: [StoredDevice],
        nowMs: Int64
    ) async throws(RelayError) -> EnqueueOutcome {
        guard let handoff = self.handoff, let reservation = handoff.reserve(submit.pushes.count, nowMs: nowMs) else {
            let outcome = try await self.store.enqueue(submit, nowMs: nowMs)
            if !outcome.duplicate { self.doorbell?.ring() }
            return outcome
        }
        var leased = submit
        leased.lease = reservation.lease
        let outcome: EnqueueOutcome
        do {
            outcome = try await self.store.enqueue(leased, nowMs: nowMs)
        } catch {
            handoff.release(reservation)
            throw error
        }
        guard !outcome.duplicate else {
            handoff.release(reservation)
            return outcome
        }
        // The devices' addresses as the submit was checked against them (a lease reads them at the lease; the
        // submit read them a moment before, in the same process).
        let pushes = submit.pushes.map { push in
            LeasedPush(
                pushID: push.pushID,
                userID: submit.userID,
                deviceID: push.deviceID,
                envelope: push.envelope,
                attempts: 1,
                enqueuedAtMs: nowMs,
                address: devices.first { $0.deviceID == push.deviceID }?.address
            )
        }
        handoff.hand(pushes, under: reservation)
        return outcome
    }

    /// A delivery token's limit when its user has `tokens` tokens: the token limit, and at most its share (one of
    /// `tokens`) of the recipient's rate and burst, so that tokens flooding a recipient leave the others theirs; never
    /// below one submit to a user with every device (``maximumPushes``).
    func tokenShare(tokens: Int) -> RateLimiter.Limit {
        let share = Double(max(tokens, 1))
        return RateLimiter.Limit(
            ratePerMinute: min(self.policy.tokenRatePerMinute, self.policy.recipientRatePerMinute / share),
            burst: max(Double(Self.maximumPushes), min(self.policy.tokenBurst, self.policy.recipientBurst / share))
        )
    }

    /// The SHA-256 of the delivery token of an `Authorization` header: nil when there is none, a failure when it is
    /// malformed.
    private static func parseTokenHash(_ authorization: String?) -> Result<[UInt8], RelayError>? {
        guard let authorization, !authorization.isEmpty else { return nil }
        let parts = authorization.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer", let token = DeliveryToken(hex: String(parts[1]))
        else {
            return .failure(
                RelayError(.badDeliveryToken, "the Authorization header must be 'Bearer <64 hex digits>'")
            )
        }
        return .success(token.sha256)
    }

    /// The token's hash once it is present, well formed and one of the user's (`valid`, read from the store).
    private static func checkToken(
        _ token: Result<[UInt8], RelayError>?,
        valid: Bool
    ) throws(RelayError) -> [UInt8] {
        guard let token else {
            throw RelayError(
                .missingDeliveryToken,
                "send the recipient's delivery token as 'Authorization: Bearer <64 hex>' (the recipient gives it to its contacts)"
            )
        }
        let hash = try token.get()
        guard valid else {
            throw RelayError(
                .badDeliveryToken,
                "this delivery token is not valid for this user (rotated or never issued): ask the contact for its current token"
            )
        }
        return hash
    }

    // MARK: input helpers

    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8]) throws(RelayError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch {
            throw RelayError(
                .malformedJSON,
                "the body is not the JSON object this endpoint takes: \(Self.describe(error))"
            )
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, _): "the key \"\(key.stringValue)\" is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            "the value at \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type"
        case .dataCorrupted: "it is not valid JSON"
        default: "it is not valid JSON"
        }
    }

    static func nonce(_ hex: String) throws(RelayError) -> [UInt8] {
        guard hex.utf8.count == 32, let nonce = Hex.decode(hex) else {
            throw RelayError(.badAuthorization, "nonce must be 32 hex digits (16 random bytes)")
        }
        return nonce
    }

    static func signature(_ hex: String) throws(RelayError) -> [UInt8] {
        guard hex.utf8.count == 128, let signature = Hex.decode(hex) else {
            throw RelayError(.badAuthorization, "signature must be 128 hex digits (an Ed25519 signature)")
        }
        return signature
    }

    static func checkAddress(_ address: RegisteredAddress) throws(RelayError) { try address.check() }

    /// Parses a submitted envelope against the padding of the relay's push services: it must fit one of them.
    private func envelope(_ bytes: [UInt8], index: Int) throws(RelayError) -> Envelope {
        var first: E2EEError?
        for padding in self.paddings {
            do throws(E2EEError) {
                return try Envelope(parsing: bytes, padding: padding)
            } catch {
                first = first ?? error
            }
        }
        guard let error = first else { throw RelayError(.internalError, "the relay has no push service") }
        throw RelayError(.malformedEnvelope, "pushes[\(index)].envelope: \(error.code): \(error.message)")
    }

    /// The name of `device`'s push service in messages ("APNs"), or "its push service" when it has none this relay
    /// delivers through.
    private func serviceName(of device: StoredDevice) -> String {
        device.address.flatMap { self.services[$0.push.service]?.displayName } ?? "its push service"
    }

    /// With several push services, an envelope must fit the padding of its device's own service (with one, the
    /// parse at decoding already checked it).
    private func checkPadding(
        of push: RelayAPI.SubmitPush,
        envelope: [UInt8],
        to device: StoredDevice
    ) throws(RelayError) {
        guard self.paddings.count > 1, let service = device.address?.push.service,
            let padding = self.services[service]?.padding
        else { return }
        do throws(E2EEError) {
            _ = try Envelope(parsing: envelope, padding: padding)
        } catch {
            throw RelayError(
                .malformedEnvelope,
                "device \"\(push.deviceID)\" receives pushes through \(service): its envelope does not fit that "
                    + "service's padding (\(error.message)); seal it for that service"
            )
        }
    }
}
