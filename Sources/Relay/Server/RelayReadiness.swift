import Hummingbird
import RelayClient

/// What readiness answers (docs/RELAY.md "Health"): ready when the relay can take a push and deliver it.
///
/// Not ready (503, with the reason code and what was wrong), in this order: the relay is shutting down (`draining`);
/// the store does not answer (`database-unreachable`) or its last write found no room (`storage-full`); the latest
/// deliveries did not reach APNs (`apns-unreachable`: refused, a certificate that does not verify, timeouts) or APNs
/// refused them all for a reason of the relay's own (`delivery-failing`: 403 key errors, 429, 5xx) — at least three
/// attempts in five minutes and none that worked.
struct RelayReadiness: Sendable {
    var status: String
    var message: String?
    var retryAfterSeconds: Int?

    static func check(service: RelayService, delivery: DeliveryService?) async -> RelayReadiness {
        if service.draining {
            return RelayReadiness(
                status: "draining",
                message: "the relay is shutting down: it answers the requests it has read; send new ones elsewhere",
                retryAfterSeconds: 5
            )
        }
        do throws(RelayError) {
            try await service.store.ping()
        } catch {
            return RelayReadiness(
                status: error.code == .storageFull ? "storage-full" : "database-unreachable",
                message: error.message,
                retryAfterSeconds: error.retryAfterSeconds ?? 1
            )
        }
        switch delivery?.health.verdict(nowMs: service.clock.nowMs) ?? .working {
        case .working:
            return RelayReadiness(status: "ok")
        case .apnsUnreachable(let message):
            return RelayReadiness(status: "apns-unreachable", message: message, retryAfterSeconds: 30)
        case .failing(let message):
            return RelayReadiness(status: "delivery-failing", message: message, retryAfterSeconds: 30)
        }
    }

    var response: Response {
        guard self.status != "ok" else { return RelayRouter.json(.ok, ["status": "ok"]) }
        var body = ["status": self.status]
        body["message"] = self.message
        var response = RelayRouter.json(.serviceUnavailable, body)
        if let seconds = self.retryAfterSeconds { response.headers[RelayRouter.retryAfter] = "\(seconds)" }
        return response
    }
}
