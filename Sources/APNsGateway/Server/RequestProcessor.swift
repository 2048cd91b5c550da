import Crypto
import Foundation
import Logging

/// Turns one complete request into the gateway's answer: validation, authentication, faults, delivery.
///
/// The order is: path, method, duplicate headers, device token; provider token; `apns-id`; the other `apns-*`
/// headers; body; device registry; then the injected fault (if any); then delivery, and 200 only once the sink has
/// the record. Every answer echoes a valid `apns-id`, or a generated one.
struct RequestProcessor: Sendable {
    let validator: RequestValidator
    let verifier: ProviderTokenVerifier
    let faults: FaultInjector
    let pipeline: DeliveryPipeline
    let devices: @Sendable () -> DeviceRegistry
    let now: @Sendable () -> Date
    let logger: Logger

    func process(_ request: GatewayRequest, connection: GatewayConnection) async -> GatewayResponse {
        let response = await self.decide(request, connection: connection)
        if self.faults.faults.responseDelay > .zero {
            try? await Task.sleep(for: self.faults.faults.responseDelay)
        }
        return response
    }

    private func decide(_ request: GatewayRequest, connection: GatewayConnection) async -> GatewayResponse {
        let sentID = request.value("apns-id")
        let apnsID = sentID.flatMap { RequestValidator.isCanonicalUUID($0) ? $0 : nil } ?? UUIDText.random()
        func reject(_ rejection: APNsRejection, token: String? = nil) -> GatewayResponse {
            self.logger.debug(
                "push rejected",
                metadata: [
                    "apns-id": "\(apnsID)", "status": "\(rejection.status)", "reason": "\(rejection.reason)",
                    "device": "\(Self.tokenHint(token))",
                ]
            )
            return GatewayResponse(apnsID: apnsID, rejection: rejection)
        }

        let token: String
        switch self.validator.route(request) {
        case .failure(let rejection): return reject(rejection)
        case .success(let value): token = value
        }
        let nowSeconds = self.now().timeIntervalSince1970
        if let rejection = self.verifier.authenticate(
            request.value("authorization"),
            connection: connection.tokens,
            now: nowSeconds
        ) {
            return reject(rejection, token: token)
        }
        if let sentID, !RequestValidator.isCanonicalUUID(sentID) { return reject(.badMessageID, token: token) }
        let headers: RequestValidator.ValidatedHeaders
        switch self.validator.headers(request) {
        case .failure(let rejection): return reject(rejection, token: token)
        case .success(let value): headers = value
        }
        if let rejection = self.validator.body(request, pushType: headers.pushType) {
            return reject(rejection, token: token)
        }
        if let rejection = self.validator.device(
            token,
            topic: headers.topic,
            bundleID: headers.bundleID,
            in: self.devices()
        ) {
            return reject(rejection, token: token)
        }
        switch self.faults.draw() {
        case .deliver:
            break
        case .reject(let rejection):
            return reject(rejection, token: token)
        case .silent:
            self.logger.debug("push left unanswered (fault)", metadata: ["apns-id": "\(apnsID)"])
            return GatewayResponse(apnsID: apnsID, rejection: nil, silent: true)
        }

        var apnsHeaders: [String: String] = [:]
        for header in request.headers where header.name.hasPrefix("apns-") {
            apnsHeaders[header.name] = header.value
        }
        let recordedHeaders = apnsHeaders
        do {
            let record = try await self.pipeline.deliver { seq in
                DeliveryRecord(
                    seq: seq,
                    apnsID: apnsID,
                    deviceToken: token,
                    headers: recordedHeaders,
                    bodyBytes: request.body,
                    receivedAtMs: RequestValidator.milliseconds(nowSeconds)
                )
            }
            self.logger.debug(
                "push delivered",
                metadata: ["apns-id": "\(apnsID)", "seq": "\(record.seq)", "device": "\(Self.tokenHint(token))"]
            )
            return GatewayResponse(apnsID: apnsID, rejection: nil)
        } catch {
            self.logger.error(
                "delivery sink failed; answering 500",
                metadata: ["apns-id": "\(apnsID)", "error": "\(error)"]
            )
            return GatewayResponse(apnsID: apnsID, rejection: .internalServerError)
        }
    }

    /// A short, non-reversible hint of a device token for logs: the first 8 hex digits of its SHA-256.
    static func tokenHint(_ token: String?) -> String {
        guard let token else { return "-" }
        let digest = SHA256.hash(data: Array(token.utf8))
        return digest.prefix(4).map { String(format: "%02x", $0) }.joined()
    }
}
