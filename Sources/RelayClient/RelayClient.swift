public import E2EECore
import Foundation
import HTTP2Client
public import Logging
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A client of the relay's API (docs/RELAY.md): what an app, or `e2ee-send --relay`, uses to publish its list,
/// register its push address, hand out delivery tokens, fetch contacts' lists and submit envelopes.
///
/// Every refusal of the relay comes back as a ``RelayError`` with the relay's reason code; a transport failure as
/// code `transport`. Call ``shutdown()`` before dropping the client.
public final class RelayClient: Sendable {
    /// A fetched, verified device list and each device's delivery state.
    public struct FetchedList: Sendable, Hashable {
        /// The list, verified (PROTOCOL §11.4). Pinning (§11.5) is the caller's decision.
        public var list: DeviceList
        public var devices: [RelayAPI.DeviceState]

        /// The devices a sender seals to: in the list and with an active push address, in list order.
        public var deliverableDevices: [DeviceList.Device] {
            let active = Set(self.devices.filter { $0.push == .active }.map(\.deviceID))
            return self.list.devices.filter { active.contains($0.deviceID) }
        }
    }

    private let baseURL: String
    private let pool: HTTP2ClientPool
    private let timeout: Duration

    /// The relay as the HTTP/2 transport names it. Its answers are JSON bodies and the metrics text: up to 1 MiB of
    /// one is read; a larger one is refused as unexpected.
    static let peer = HTTP2Peer(
        name: "the relay",
        logPrefix: "relay",
        alpnHint: "check that the URL points at an e2ee-relay",
        maximumResponseBody: 1 << 20
    )

    /// How often a request that provably never reached the relay (its connection closed or was sent GOAWAY first) is
    /// sent again on a new connection, within its timeout, before the failure is reported.
    static let maximumResends = 4

    /// - Parameters:
    ///   - baseURL: `https://host:port` of the relay.
    ///   - trustedCAPEMPath: A PEM CA file to trust instead of the system roots (a relay with a loopback CA).
    ///   - timeout: The most one request may take, connecting (TCP, TLS, ALPN `h2`) included.
    ///   - logger: Where the connection's opening and closing are logged (default: nowhere).
    /// - Throws: `configuration` for a bad URL or CA file.
    public init(
        baseURL: String,
        trustedCAPEMPath: String? = nil,
        timeout: Duration = .seconds(10),
        logger: Logger = Logger(label: "e2ee.relay-client", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws(RelayError) {
        guard let url = URL(string: baseURL), url.scheme == "https", url.host != nil, url.query == nil else {
            throw RelayError(.configuration, "the relay URL must look like https://host:port; got \(baseURL)")
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["h2"]
        if let trustedCAPEMPath {
            guard let certificates = try? NIOSSLCertificate.fromPEMFile(trustedCAPEMPath), !certificates.isEmpty else {
                throw RelayError(.configuration, "cannot load a PEM CA certificate from \(trustedCAPEMPath)")
            }
            tls.trustRoots = .certificates(certificates)
        }
        let sslContext: NIOSSLContext
        do {
            sslContext = try NIOSSLContext(configuration: tls)
        } catch {
            throw RelayError(.configuration, "cannot set up TLS for the relay at \(baseURL)")
        }
        self.pool = HTTP2ClientPool(
            target: HTTP2ClientPool.Target(baseURL: baseURL),
            peer: Self.peer,
            sslContext: sslContext,
            group: MultiThreadedEventLoopGroup.singleton,
            connectTimeout: TimeAmount(timeout),
            logger: logger
        )
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.timeout = timeout
    }

    /// Closes the connection; requests still in flight end as failed.
    public func shutdown() async {
        await self.pool.shutdown()
    }

    // MARK: lists

    /// Publishes the user's signed list, exactly as `list.jsonData()` encodes it.
    public func publish(_ list: DeviceList) async throws(RelayError) -> RelayAPI.PublishResponse {
        try await self.publish(listJSON: list.jsonData(), userID: list.userID)
    }

    /// Publishes list bytes as they are (tests send hostile ones).
    public func publish(listJSON: [UInt8], userID: String) async throws(RelayError) -> RelayAPI.PublishResponse {
        let (_, body) = try await self.exchange(.PUT, Self.userPath(userID, "device-list"), body: listJSON, expect: 200)
        return try Self.decode(RelayAPI.PublishResponse.self, body)
    }

    /// Fetches and verifies a user's list.
    ///
    /// - Throws: the relay's refusal (`unknown-user`), or `bad-device-list` when the served list does not verify
    ///   (the relay, or whoever sits in front of it, altered it).
    public func fetchList(userID: String) async throws(RelayError) -> FetchedList {
        let (_, body) = try await self.exchange(.GET, Self.userPath(userID, "device-list"), body: nil, expect: 200)
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let listObject = object["device_list"],
            let listData = try? JSONSerialization.data(withJSONObject: listObject),
            let devicesObject = object["devices"],
            let devicesData = try? JSONSerialization.data(withJSONObject: devicesObject)
        else {
            throw RelayError(.unexpectedResponse, "the relay's list answer is not {\"device_list\":…,\"devices\":[…]}")
        }
        let list: DeviceList
        do throws(E2EEError) {
            list = try DeviceList.parse(Array(listData))
        } catch {
            throw RelayError(
                .badDeviceList,
                "the served list does not verify (\(error.code)): \(error.message)",
                listError: error.code
            )
        }
        guard list.userID == userID else {
            throw RelayError(.userMismatch, "the relay served user \"\(list.userID)\"'s list for \"\(userID)\"")
        }
        let devices = try Self.decode([RelayAPI.DeviceState].self, Array(devicesData))
        return FetchedList(list: list, devices: devices)
    }

    // MARK: device-signed requests

    /// Registers this device's push address, signed with its device signing key.
    public func registerPush(
        userID: String,
        deviceID: String,
        address: RegisteredAddress,
        signingKey: SigningPrivateKey,
        nowMs: UInt64 = WallClock.system.unsignedMs
    ) async throws(RelayError) {
        let registration = try RelayAuthorization.signedRegistration(
            userID: userID,
            deviceID: deviceID,
            address: address,
            signingKey: signingKey,
            nowMs: nowMs
        )
        try await self.registerPush(userID: userID, deviceID: deviceID, registration: registration)
    }

    /// Sends a registration as it is (tests replay and tamper with them).
    public func registerPush(
        userID: String,
        deviceID: String,
        registration: RelayAPI.PushRegistration
    )
        async throws(RelayError)
    {
        let path = Self.userPath(userID, "devices/\(Identifiers.encodePathSegment(deviceID))/push")
        _ = try await self.exchange(.PUT, path, body: RelayJSON.encode(registration), expect: 200)
    }

    /// Replaces the user's delivery tokens, signed by one of its devices.
    @discardableResult
    public func setDeliveryTokens(
        userID: String,
        deviceID: String,
        tokens: [DeliveryToken],
        signingKey: SigningPrivateKey,
        nowMs: UInt64 = WallClock.system.unsignedMs
    ) async throws(RelayError) -> Int {
        let set = try RelayAuthorization.signedTokenSet(
            userID: userID,
            deviceID: deviceID,
            tokens: tokens,
            signingKey: signingKey,
            nowMs: nowMs
        )
        let (_, body) = try await self.exchange(
            .PUT,
            Self.userPath(userID, "delivery-tokens"),
            body: RelayJSON.encode(set),
            expect: 200
        )
        struct Answer: Decodable { var tokens: Int }
        return try Self.decode(Answer.self, body).tokens
    }

    // MARK: submits

    /// Submits envelopes for devices of `userID`, retrying transport failures with the same idempotency key.
    ///
    /// - Parameters:
    ///   - pushes: (device id, envelope), one per device.
    ///   - token: The recipient's delivery token.
    ///   - idempotencyKey: One per logical submit (default: a new UUID); reuse it only to retry this submit.
    ///   - attempts: How many times a transport failure is retried (the relay answers a retry from its record).
    public func submit(
        userID: String,
        pushes: [(deviceID: String, envelope: Envelope)],
        token: DeliveryToken,
        idempotencyKey: String = IdempotencyKey.random(),
        attempts: Int = 3
    ) async throws(RelayError) -> RelayAPI.SubmitResponse {
        let request = RelayAPI.SubmitRequest(
            pushes: pushes.map {
                RelayAPI.SubmitPush(deviceID: $0.deviceID, envelope: Data($0.envelope.serialized).base64EncodedString())
            }
        )
        return try await self.submit(
            userID: userID,
            body: RelayJSON.encode(request),
            authorization: "Bearer \(token.hex)",
            idempotencyKey: idempotencyKey,
            attempts: attempts
        )
    }

    /// Submits a raw body with raw headers (tests send hostile ones).
    public func submit(
        userID: String,
        body: [UInt8],
        authorization: String?,
        idempotencyKey: String?,
        attempts: Int = 1
    ) async throws(RelayError) -> RelayAPI.SubmitResponse {
        var headers: [(String, String)] = []
        if let authorization { headers.append(("Authorization", authorization)) }
        if let idempotencyKey { headers.append(("Idempotency-Key", idempotencyKey)) }
        var attempt = 1
        // Once an attempt may have reached the relay, a later "could not connect" does not mean nothing was queued.
        var mayHaveReached = false
        while true {
            do throws(RelayError) {
                let (_, answer) = try await self.exchange(
                    .POST,
                    Self.userPath(userID, "pushes"),
                    body: body,
                    headers: headers,
                    expect: 202
                )
                if let response = RelayJSON.decodeSubmitResponse(answer) { return response }
                return try Self.decode(RelayAPI.SubmitResponse.self, answer)
            } catch {
                guard error.code == .transport || error.code == .outcomeUnknown else { throw error }
                mayHaveReached = mayHaveReached || error.code == .outcomeUnknown
                guard attempt < attempts else {
                    guard mayHaveReached, attempts > 1 else { throw error }
                    throw RelayError(
                        .outcomeUnknown,
                        "the submit was sent to the relay at \(self.baseURL) but no answer came after \(attempts) "
                            + "attempts with the same idempotency key (\(error.message)); the relay may have queued it"
                    )
                }
                attempt += 1
                try? await Task.sleep(for: .milliseconds(200 * attempt))
            }
        }
    }

    /// `GET /v1/health`: true when the relay and its database answer.
    public func isHealthy() async -> Bool {
        (try? await self.exchange(.GET, "/v1/health", body: nil, expect: 200)) != nil
    }

    /// `GET /metrics` as text.
    public func metricsText() async throws(RelayError) -> String {
        let (_, body) = try await self.exchange(.GET, "/metrics", body: nil, expect: 200)
        return String(decoding: body, as: UTF8.self)
    }

    // MARK: plumbing

    package static func userPath(_ userID: String, _ rest: String) -> String {
        "/v1/users/\(Identifiers.encodePathSegment(userID))/\(rest)"
    }

    /// One request; a non-`expect` status becomes the relay's ``RelayError``.
    ///
    /// A request that provably never reached the relay (queued on a connection that closed, or above a GOAWAY's last
    /// stream) is sent again on a new connection within the same timeout; anything that may have reached it is
    /// reported as `outcome-unknown`, for the caller to retry with the same idempotency key.
    func exchange(
        _ method: HTTPMethod,
        _ path: String,
        body: [UInt8]?,
        headers: [(String, String)] = [],
        expect: Int
    ) async throws(RelayError) -> (Int, [UInt8]) {
        let requestHeaders = self.requestHeaders(method, path, body: body, headers: headers)
        let requestBody = body.map { ByteBuffer(bytes: $0) }
        let deadline = NIODeadline.now() + TimeAmount(self.timeout)
        var lastReason = "the connection closed before the request was sent"
        for _ in 0..<Self.maximumResends {
            let request = HTTP2PendingRequest(headers: requestHeaders, body: requestBody, deadline: deadline)
            guard let outcome = await self.pool.send(request) else {
                throw RelayError(.transport, "the relay client was shut down; make a new one")
            }
            switch outcome {
            case .answered(let status, let answerHeaders, let buffer, let truncated):
                guard !truncated else {
                    throw RelayError(
                        .unexpectedResponse,
                        "the relay's answer is larger than \(Self.peer.maximumResponseBody) bytes"
                    )
                }
                return try Self.answer(status, answerHeaders, Array(buffer: buffer), expect: expect)
            case .notSent:
                break
            case .refused(let reason):
                lastReason = reason
            case .connectFailed(let reason):
                throw RelayError(.transport, "the relay at \(self.baseURL) could not be reached: \(reason)")
            case .untrustedCertificate(let reason):
                throw RelayError(.untrustedCertificate, "the relay at \(self.baseURL) is not trusted: \(reason)")
            case .failed(let reason):
                throw RelayError(.outcomeUnknown, "no answer from the relay at \(self.baseURL): \(reason)")
            case .timedOut:
                throw RelayError(
                    .outcomeUnknown,
                    "no answer from the relay at \(self.baseURL): none came within \(self.timeout)"
                )
            case .cancelled:
                throw RelayError(
                    .outcomeUnknown,
                    "no answer from the relay at \(self.baseURL): the request was cancelled"
                )
            }
            if Task.isCancelled {
                throw RelayError(
                    .transport,
                    "the request to the relay at \(self.baseURL) was cancelled before it was sent"
                )
            }
            if NIODeadline.now() >= deadline {
                throw RelayError(.transport, "the relay at \(self.baseURL) could not be reached in time: \(lastReason)")
            }
        }
        throw RelayError(
            .transport,
            "the relay at \(self.baseURL) could not be reached: its connections closed \(Self.maximumResends) times "
                + "before the request was sent (\(lastReason))"
        )
    }

    /// The request's HTTP/2 header block: pseudo-headers, the JSON content type, the caller's headers (lowercase, as
    /// HTTP/2 requires), and the body's length.
    private func requestHeaders(
        _ method: HTTPMethod,
        _ path: String,
        body: [UInt8]?,
        headers: [(String, String)]
    ) -> HPACKHeaders {
        var block = HPACKHeaders()
        block.reserveCapacity(headers.count + 6)
        block.add(name: ":method", value: method.rawValue)
        block.add(name: ":scheme", value: "https")
        block.add(name: ":path", value: self.pool.target.pathPrefix + path)
        block.add(name: ":authority", value: self.pool.target.authority)
        block.add(name: "content-type", value: "application/json")
        for (name, value) in headers { block.add(name: name.lowercased(), value: value) }
        if let body { block.add(name: "content-length", value: String(body.count)) }
        return block
    }

    /// The answer's body when its status is `expect`; otherwise the relay's refusal as a ``RelayError``.
    private static func answer(
        _ status: Int,
        _ headers: HPACKHeaders,
        _ bytes: [UInt8],
        expect: Int
    ) throws(RelayError) -> (Int, [UInt8]) {
        guard status == expect else {
            let retryAfter = headers.first(name: "retry-after").flatMap { Int($0) }
            if let answer = try? JSONDecoder().decode(RelayAPI.ErrorBody.self, from: Data(bytes)) {
                throw RelayError(.received(answer.error, status: status), answer.message, retryAfterSeconds: retryAfter)
            }
            throw RelayError(.unexpectedResponse, "the relay answered \(status) without a reason code")
        }
        return (status, bytes)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws(RelayError) -> T {
        guard let value = try? JSONDecoder().decode(T.self, from: Data(bytes)) else {
            throw RelayError(.unexpectedResponse, "the relay's answer is not the JSON this client expects")
        }
        return value
    }
}
