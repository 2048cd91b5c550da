import Foundation
import HTTPTypes
public import Hummingbird
import NIOCore
import RelayClient

/// The HTTP routes of API version 1 (docs/RELAY.md), over a ``RelayService``.
///
/// Every handler answers JSON; every refusal is `{"error": <reason code>, "message": ...}` with the code's status
/// (and `Retry-After` for 429/503).
public enum RelayRouter: Sendable {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let retryAfter = HTTPField.Name("Retry-After")!
    static let requestID = HTTPField.Name("X-Request-Id")!

    /// The router; tests drive it in-process with HummingbirdTesting, `serve` puts it behind TLS.
    ///
    /// - Parameters:
    ///   - service: The API decisions.
    ///   - delivery: The delivery workers, whose health readiness reports (nil: an API-only relay, ready when its
    ///     store is).
    ///   - metricsOnAPI: Whether `GET /metrics` is served here (false when the metrics have a listener of their own).
    public static func build(
        service: RelayService,
        delivery: DeliveryService? = nil,
        metricsOnAPI: Bool = true
    ) -> Router<BasicRequestContext> {
        let router = Router()
        router.middlewares.add(NotFoundMiddleware())
        let users = router.group("v1/users/:user")
        // The handlers throw only RelayError (typed), which answers as the API documents it.
        users.put("device-list") { request, context async throws(RelayError) -> Response in
            let body = try await Self.body(request, limit: service.policy.maximumBodyBytes)
            return Self.json(.ok, try await service.publish(userID: try Self.user(context), body: body))
        }
        users.get("device-list") { _, context async throws(RelayError) -> Response in
            let fetched = try await service.fetch(userID: try Self.user(context))
            // The list goes out exactly as the user signed it; the states follow.
            var bytes = Array(#"{"device_list":"#.utf8) + fetched.list
            bytes += Array(#","devices":"#.utf8) + Self.encode(fetched.devices) + Array("}".utf8)
            return Self.raw(.ok, bytes)
        }
        users.put("devices/:device/push") { request, context async throws(RelayError) -> Response in
            let body = try await Self.body(request, limit: service.policy.maximumBodyBytes)
            let device = Identifiers.decodePathSegment(context.parameters.get("device") ?? "")
            try await service.registerPush(userID: try Self.user(context), deviceID: device, body: body)
            return Self.json(.ok, ["push": "active"])
        }
        users.put("delivery-tokens") { request, context async throws(RelayError) -> Response in
            let body = try await Self.body(request, limit: service.policy.maximumBodyBytes)
            let count = try await service.replaceTokens(userID: try Self.user(context), body: body)
            return Self.json(.ok, ["tokens": count])
        }
        users.post("pushes") { request, context in
            // Every answer to a submit, refusals included, names the request the relay logged it under.
            let requestID = RelayService.newRequestID()
            var response: Response
            do throws(RelayError) {
                let body = try await Self.body(request, limit: service.policy.maximumSubmitBytes)
                let submitted = try await service.submit(
                    userID: try Self.user(context),
                    authorization: request.headers[.authorization],
                    idempotencyKey: request.headers[Self.idempotencyKey],
                    body: body,
                    requestID: requestID
                )
                response = Self.raw(.accepted, RelayJSON.encode(submitted))
            } catch {
                response = error.response
            }
            response.headers[Self.requestID] = requestID
            return response
        }
        // Readiness: whether to send requests here (docs/RELAY.md "Health"); /v1/health is the same answer.
        let ready: @Sendable (Request, BasicRequestContext) async -> Response = { _, _ in
            await RelayReadiness.check(service: service, delivery: delivery).response
        }
        router.get("v1/health", use: ready)
        router.get("v1/health/ready", use: ready)
        // Liveness: the process serves requests (a supervisor restarts it only when this fails).
        router.get("v1/health/live") { _, _ in Self.json(.ok, ["status": "live"]) }
        if metricsOnAPI {
            router.get("metrics") { _, _ in await Self.metrics(service) }
        }
        return router
    }

    /// The metrics alone (`--metrics-host`/`--metrics-port`: a listener of their own, plain HTTP, for the scraper's
    /// network only).
    public static func buildMetrics(service: RelayService) -> Router<BasicRequestContext> {
        let router = Router()
        router.middlewares.add(NotFoundMiddleware())
        router.get("metrics") { _, _ in await Self.metrics(service) }
        return router
    }

    /// `GET /metrics`: Prometheus text, with the queue's depth read now.
    static func metrics(_ service: RelayService) async -> Response {
        if let counts = try? await service.store.counts() {
            service.metrics.setQueue(queued: counts[.queued] ?? 0, leased: counts[.leased] ?? 0)
        }
        var response = Self.raw(.ok, service.metrics.render())
        response.headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return response
    }

    private static func user(_ context: BasicRequestContext) throws(RelayError) -> String {
        let user = Identifiers.decodePathSegment(context.parameters.get("user") ?? "")
        try Identifiers.checkUserID(user)
        return user
    }

    private static func body(_ request: Request, limit: Int) async throws(RelayError) -> [UInt8] {
        // A declared length over the limit is refused before a byte of the body is read.
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit {
            throw RelayError(
                .bodyTooLarge,
                "the body is \(declared) bytes (Content-Length) and this endpoint takes at most \(limit)"
            )
        }
        do {
            var buffer = try await request.body.collect(upTo: limit)
            return buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch is NIOTooManyBytesError {
            throw RelayError(.bodyTooLarge, "the body is larger than \(limit) bytes, the most this endpoint takes")
        } catch {
            throw RelayError(.malformedJSON, "the request body could not be read: send it again")
        }
    }

    static func encode<T: Encodable>(_ value: T) -> [UInt8] { RelayJSON.encode(value) }

    static func json<T: Encodable>(_ status: HTTPResponse.Status, _ value: T) -> Response {
        Self.raw(status, Self.encode(value))
    }

    static func raw(_ status: HTTPResponse.Status, _ bytes: [UInt8]) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }
}
