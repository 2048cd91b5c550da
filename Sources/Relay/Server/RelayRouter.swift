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

    /// The router; tests drive it in-process with HummingbirdTesting, `serve` puts it behind TLS.
    public static func build(service: RelayService) -> Router<BasicRequestContext> {
        let router = Router()
        router.middlewares.add(RelayErrorMiddleware())
        let users = router.group("v1/users/:user")
        users.put("device-list") { request, context in
            await Self.answer { () async throws(RelayError) -> Response in
                let body = try await Self.body(request, limit: service.policy.maximumBodyBytes)
                return Self.json(.ok, try await service.publish(userID: try Self.user(context), body: body))
            }
        }
        users.get("device-list") { _, context in
            await Self.answer { () async throws(RelayError) -> Response in
                let fetched = try await service.fetch(userID: try Self.user(context))
                // The list goes out exactly as the user signed it; the states follow.
                var bytes = Array(#"{"device_list":"#.utf8) + fetched.list
                bytes += Array(#","devices":"#.utf8) + Self.encode(fetched.devices) + Array("}".utf8)
                return Self.raw(.ok, bytes)
            }
        }
        users.put("devices/:device/push") { request, context in
            await Self.answer { () async throws(RelayError) -> Response in
                let body = try await Self.body(request, limit: service.policy.maximumBodyBytes)
                let device = Identifiers.decodePathSegment(context.parameters.get("device") ?? "")
                try await service.registerPush(userID: try Self.user(context), deviceID: device, body: body)
                return Self.json(.ok, ["push": "active"])
            }
        }
        users.put("delivery-tokens") { request, context in
            await Self.answer { () async throws(RelayError) -> Response in
                let body = try await Self.body(request, limit: service.policy.maximumBodyBytes)
                let count = try await service.replaceTokens(userID: try Self.user(context), body: body)
                return Self.json(.ok, ["tokens": count])
            }
        }
        users.post("pushes") { request, context in
            await Self.answer { () async throws(RelayError) -> Response in
                let body = try await Self.body(request, limit: service.policy.maximumSubmitBytes)
                let response = try await service.submit(
                    userID: try Self.user(context),
                    authorization: request.headers[.authorization],
                    idempotencyKey: request.headers[Self.idempotencyKey],
                    body: body
                )
                return Self.json(.accepted, response)
            }
        }
        router.get("v1/health") { _, _ in
            do throws(RelayError) {
                try await service.store.ping()
                return Self.json(.ok, ["status": "ok"])
            } catch {
                // The process runs; its database does not answer, or its last write found no room on the disk (until
                // a write succeeds again): a load balancer sends elsewhere.
                var response = Self.json(
                    .serviceUnavailable,
                    [
                        "status": error.code == .storageFull ? "storage-full" : "database-unreachable",
                        "message": error.message,
                    ]
                )
                response.headers[Self.retryAfter] = "\(error.retryAfterSeconds ?? 1)"
                return response
            }
        }
        router.get("metrics") { _, _ in
            if let counts = try? await service.store.counts() {
                service.metrics.setQueue(queued: counts[.queued] ?? 0, leased: counts[.leased] ?? 0)
            }
            var response = Self.raw(.ok, service.metrics.render())
            response.headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return response
        }
        return router
    }

    private static func user(_ context: BasicRequestContext) throws(RelayError) -> String {
        let user = Identifiers.decodePathSegment(context.parameters.get("user") ?? "")
        try Identifiers.checkUserID(user)
        return user
    }

    private static func body(_ request: Request, limit: Int) async throws(RelayError) -> [UInt8] {
        do {
            var buffer = try await request.body.collect(upTo: limit)
            return buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch is NIOTooManyBytesError {
            throw RelayError(.bodyTooLarge, "the body is larger than \(limit) bytes, the most this endpoint takes")
        } catch {
            throw RelayError(.malformedJSON, "the request body could not be read: send it again")
        }
    }

    private static func answer(_ body: () async throws(RelayError) -> Response) async -> Response {
        do throws(RelayError) {
            return try await body()
        } catch {
            var response = Self.json(
                HTTPResponse.Status(code: error.code.httpStatus),
                RelayAPI.ErrorBody(error: error.code.rawValue, message: error.message)
            )
            if let seconds = error.retryAfterSeconds { response.headers[Self.retryAfter] = "\(seconds)" }
            return response
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
