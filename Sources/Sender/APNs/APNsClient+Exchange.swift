import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

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
    /// The largest error body read; APNs bodies are a few dozen bytes.
    static let maximumResponseBody = 16 * 1024

    /// Makes one HTTP/2 request with `token` and decodes the answer, bounded by the per-stream timeout.
    func exchange(_ request: APNsRequest, token: APNsProviderToken) async -> APNsExchangeOutcome {
        let timeout = self.configuration.streamTimeout
        let deadline = NIODeadline.now() + Self.timeAmount(timeout)
        var http = HTTPClientRequest(url: "\(self.configuration.environment.baseURL)/3/device/\(request.deviceToken)")
        http.method = self.method
        for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) {
            let lowercased = name.lowercased()
            // The provider owns authentication and framing headers; a request never overrides them.
            guard lowercased != "authorization", lowercased != "content-length", !lowercased.hasPrefix(":") else {
                continue
            }
            http.headers.add(name: lowercased, value: value)
        }
        http.headers.add(name: "authorization", value: "bearer \(token.jwt)")
        // AsyncHTTPClient sets content-length from the known body length.
        http.body = .bytes(ByteBuffer(bytes: request.bodyBytes))

        do {
            let response = try await self.http.execute(http, deadline: deadline)
            let bytes = try await response.body.collect(upTo: Self.maximumResponseBody)
            let decoded = Self.decodeErrorBody(Array(buffer: bytes))
            return .answered(
                APNsExchangeAnswer(
                    status: Int(response.status.code),
                    apnsID: response.headers.first(name: "apns-id"),
                    reason: decoded.reason,
                    timestamp: decoded.timestamp
                )
            )
        } catch let error as HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout:
                return .local(.timeout(after: timeout))
            case .alreadyShutdown:
                return .local(.clientShutdown)
            case .cancelled:
                // AsyncHTTPClient also reports requests failed by a closing connection as cancelled.
                if Task.isCancelled { return .local(.cancelled) }
                return .local(
                    self.isShutDown ? .clientShutdown : .connectionError("request failed as the connection closed")
                )
            default:
                if NIODeadline.now() >= deadline { return .local(.timeout(after: timeout)) }
                return .local(self.isShutDown ? .clientShutdown : .connectionError("\(error)"))
            }
        } catch is CancellationError {
            return .local(.cancelled)
        } catch {
            if NIODeadline.now() >= deadline { return .local(.timeout(after: timeout)) }
            if self.isShutDown { return .local(.clientShutdown) }
            let outcome = APNsLocalOutcome.connectionError(Self.describe(error))
            return Self.isRefusedStream(error) ? .refused(outcome) : .local(outcome)
        }
    }

    /// Whether `error` is swift-nio-http2's `StreamClosed` with `REFUSED_STREAM` (0x7).
    ///
    /// Sender does not link NIOHTTP2 itself (AsyncHTTPClient owns the HTTP/2 stack), so the error is recognised by
    /// its type name and error code as reflected: precise enough for the one code that makes a retry safe.
    static func isRefusedStream(_ error: any Error) -> Bool {
        let mirror = Mirror(reflecting: error)
        guard String(describing: mirror.subjectType) == "StreamClosed" else { return false }
        guard let code = mirror.children.first(where: { $0.label == "errorCode" })?.value else { return false }
        return String(describing: code).contains("0x7 ")
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

    /// A short description of a transport error that carries no request data.
    private static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        return text.count > 200 ? String(text.prefix(200)) + "..." : text
    }
}
