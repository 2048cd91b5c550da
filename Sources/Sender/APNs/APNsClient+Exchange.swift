import Foundation
import HTTP2Client
import NIOCore
import NIOHPACK

/// What APNs answered to one HTTP request.
struct APNsExchangeAnswer: Sendable {
    var status: Int
    var apnsID: String?
    var reason: APNsReason?
    var timestamp: Int64?
}

/// The result of one HTTP request: an answer, or why there is none.
enum APNsExchangeOutcome: Sendable {
    case answered(APNsExchangeAnswer)
    case local(APNsLocalOutcome)
    /// The server refused the stream (`RST_STREAM(REFUSED_STREAM)`): HTTP/2 guarantees it did no processing
    /// (RFC 9113 §8.7), so the push may be sent again without risking a duplicate.
    case refused(APNsLocalOutcome)
}

extension APNsClient {
    /// APNs as the HTTP/2 transport names it in messages and logs (`apns.*` metadata). Its answers are a few dozen
    /// bytes: 16 KiB of one is kept. A GOAWAY's debug data is an error body like a stream's.
    static let peer = HTTP2Peer(
        name: "APNs",
        logPrefix: "apns",
        alpnHint: "check that the URL points at APNs or an APNs-compatible gateway",
        maximumResponseBody: 16 * 1024,
        goAwayReason: { APNsClient.decodeErrorBody(Array(buffer: $0)).reason.map { "\($0)" } }
    )
    /// How often a push that never left the process is handed to a newer connection before it is reported.
    static let maximumResends = 4

    /// Makes one HTTP/2 request with `token` and decodes the answer, bounded by the per-stream timeout.
    ///
    /// A push queued on a connection that went away before its stream was opened is sent on the next connection,
    /// within the same deadline, without counting as an attempt: APNs never saw it.
    func exchange(_ request: APNsRequest, token: APNsProviderToken) async -> APNsExchangeOutcome {
        let timeout = self.configuration.streamTimeout
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        let headers = self.requestHeaders(request, token: token)
        let body = ByteBuffer(string: request.body)
        for _ in 0..<Self.maximumResends {
            let push = HTTP2PendingRequest(headers: headers, body: body, deadline: deadline)
            guard let outcome = await self.pool.send(push) else { return .local(.clientShutdown) }
            switch outcome {
            case .answered(let status, let answerHeaders, let body, _):
                let apnsID = answerHeaders.first(name: "apns-id")
                let decoded: (reason: APNsReason?, timestamp: Int64?) =
                    body.readableBytes == 0 ? (nil, nil) : Self.decodeErrorBody(Array(buffer: body))
                return .answered(
                    APNsExchangeAnswer(
                        status: status,
                        apnsID: apnsID,
                        reason: decoded.reason,
                        timestamp: decoded.timestamp
                    )
                )
            case .timedOut:
                return .local(.timeout(after: timeout))
            case .cancelled:
                return .local(.cancelled)
            case .refused(let detail):
                if self.isShutDown { return .local(.clientShutdown) }
                return .refused(.connectionError(detail))
            case .failed(let detail), .connectFailed(let detail):
                if self.isShutDown { return .local(.clientShutdown) }
                return .local(.connectionError(detail))
            case .untrustedCertificate(let detail):
                if self.isShutDown { return .local(.clientShutdown) }
                return .local(.untrustedCertificate(detail))
            case .notSent:
                if self.isShutDown { return .local(.clientShutdown) }
                if Task.isCancelled { return .local(.cancelled) }
                if NIODeadline.now() >= deadline { return .local(.timeout(after: timeout)) }
                continue
            }
        }
        return .local(
            .connectionError("the connection to APNs closed \(Self.maximumResends) times before the push could be sent")
        )
    }

    /// The request's HTTP/2 header block: pseudo-headers, the `apns-*` headers (sorted, lowercase), the provider
    /// token, and the body length.
    func requestHeaders(_ request: APNsRequest, token: APNsProviderToken) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(request.headers.count + 6)
        headers.add(name: ":method", value: self.method)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":path", value: "\(self.pool.target.pathPrefix)/3/device/\(request.deviceToken)")
        headers.add(name: ":authority", value: self.pool.target.authority)
        for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) {
            let lowercased = name.lowercased()
            // The provider owns authentication and framing headers; a request never overrides them.
            guard lowercased != "authorization", lowercased != "content-length", !lowercased.hasPrefix(":") else {
                continue
            }
            headers.add(name: lowercased, value: value)
        }
        headers.add(name: "authorization", value: "bearer \(token.jwt)")
        headers.add(name: "content-length", value: String(request.body.utf8.count))
        return headers
    }

    /// Decodes `{"reason": ..., "timestamp": ...}`, tolerating an empty body, a missing field, a string timestamp
    /// and fields we do not know.
    static func decodeErrorBody(_ bytes: [UInt8]) -> (reason: APNsReason?, timestamp: Int64?) {
        guard !bytes.isEmpty,
            let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        else { return (nil, nil) }
        let reason = (object["reason"] as? String).map(APNsReason.init(rawValue:))
        let timestamp: Int64?
        switch object["timestamp"] {
        case let number as NSNumber: timestamp = number.int64Value
        case let text as String: timestamp = Int64(text)
        default: timestamp = nil
        }
        return (reason, timestamp)
    }
}
