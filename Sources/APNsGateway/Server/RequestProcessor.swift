import Crypto
import E2EECore
import Foundation
import Logging
import NIOCore
import PushTransport

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
    let clock: WallClock
    let logger: Logger

    /// Decides the request and completes with the answer on `eventLoop`.
    ///
    /// Validation, authentication and faults run right here, on the stream's event loop; only delivery waits for
    /// the sink (``DeliveryPipeline``). An injected response delay is a timer on the event loop.
    func process(
        _ request: GatewayRequest,
        connection: GatewayConnection,
        on eventLoop: any EventLoop
    ) -> EventLoopFuture<GatewayResponse> {
        let response = self.decide(request, connection: connection, on: eventLoop)
        let delay = self.faults.faults.responseDelay
        guard delay > .zero else { return response }
        return response.flatMap { answer in
            eventLoop.scheduleTask(in: TimeAmount(delay)) { answer }.futureResult
        }
    }

    private func decide(
        _ request: GatewayRequest,
        connection: GatewayConnection,
        on eventLoop: any EventLoop
    ) -> EventLoopFuture<GatewayResponse> {
        let sentID = request.value("apns-id")
        let apnsID = sentID.flatMap { RequestValidator.isCanonicalUUID($0) ? $0 : nil } ?? RandomID.uuidText()
        func reject(_ rejection: APNsRejection, token: String? = nil) -> EventLoopFuture<GatewayResponse> {
            self.logger.debug(
                "push rejected",
                metadata: [
                    "apns-id": "\(apnsID)", "status": "\(rejection.status)", "reason": "\(rejection.reason)",
                    "device": "\(Self.tokenHint(token))",
                ]
            )
            return eventLoop.makeSucceededFuture(GatewayResponse(apnsID: apnsID, rejection: rejection))
        }

        let token: String
        switch self.validator.route(request) {
        case .failure(let rejection): return reject(rejection)
        case .success(let value): token = value
        }
        let nowSeconds = Double(self.clock.nowMs) / 1000
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
            return eventLoop.makeSucceededFuture(GatewayResponse(apnsID: apnsID, rejection: nil, silent: true))
        }

        var apnsHeaders: [String: String] = [:]
        for header in request.headers where header.name.hasPrefix("apns-") {
            apnsHeaders[header.name] = header.value
        }
        let delivered = eventLoop.makePromise(of: DeliveryRecord.self)
        // The record is made here, outside the pipeline's lock; the pipeline only numbers it.
        let record = DeliveryRecord(
            seq: 0,
            apnsID: apnsID,
            deviceToken: token,
            headers: apnsHeaders,
            bodyBytes: request.body,
            receivedAtMs: RequestValidator.milliseconds(nowSeconds)
        )
        self.pipeline.deliver(record, promise: delivered)
        let logger = self.logger
        return delivered.futureResult.map { record in
            logger.debug(
                "push delivered",
                metadata: ["apns-id": "\(apnsID)", "seq": "\(record.seq)", "device": "\(Self.tokenHint(token))"]
            )
            return GatewayResponse(apnsID: apnsID, rejection: nil)
        }.recover { error in
            logger.error(
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
