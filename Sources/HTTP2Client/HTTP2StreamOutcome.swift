package import NIOCore
package import NIOHPACK
import NIOHTTP2

/// What became of one request handed to an ``HTTP2ClientConnection``: the server's answer, or why there is none.
///
/// The cases separate what may have reached the server from what provably did not, because only the latter can be
/// sent again without risking a duplicate (a call push that rings twice, a submit queued twice).
package enum HTTP2StreamOutcome: Sendable {
    /// The server answered: the final `:status`, the final header block, and the body. A body larger than
    /// ``HTTP2Peer/maximumResponseBody`` is not read to its end: the stream is reset, `body` holds what came before,
    /// and `bodyTruncated` is set.
    case answered(status: Int, headers: HPACKHeaders, body: ByteBuffer, bodyTruncated: Bool)
    /// No answer within the request's deadline; the stream was reset. The request may have been processed.
    case timedOut
    /// The server did not process the stream: `RST_STREAM(REFUSED_STREAM)`, or a stream above a GOAWAY's last stream
    /// ID (RFC 9113 §6.8, §8.7). Sending it again cannot duplicate it.
    case refused(String)
    /// The request never left this process: the connection went away before its stream was opened. It is sent on the
    /// next connection without counting an attempt.
    case notSent
    /// The stream was sent and then lost (connection closed, stream reset); the request may have been processed.
    case failed(String)
    /// No connection could be established; nothing was sent.
    case connectFailed(String)
    /// The server's TLS certificate does not verify against the trusted CA: nothing was sent, and sending again cannot
    /// help until the configuration changes.
    case untrustedCertificate(String)
    /// The sending task was cancelled; the stream (if any) was reset.
    case cancelled
}

/// One request on its way through a connection: the encoded request, its deadline, and the continuation that gets
/// its outcome.
///
/// `@unchecked Sendable`: the request fields are immutable. The sending task sets the continuation once, before it
/// hands the request to ``HTTP2ClientConnection/submit(_:)``, whose lock publishes it to the event loop. From then on
/// `continuation`, `streamID` and the response fields are read and written only on the connection's event loop
/// (by ``HTTP2ClientHandler``), which resumes the continuation exactly once and then clears it.
package final class HTTP2PendingRequest: @unchecked Sendable {
    let headers: HPACKHeaders
    let body: ByteBuffer?
    let deadline: NIODeadline
    private var continuation: CheckedContinuation<HTTP2StreamOutcome, Never>?

    // Event-loop state.
    var streamID: HTTP2StreamID?
    var status: Int?
    var responseHeaders: HPACKHeaders?
    var responseBody: ByteBuffer?
    var bodyTruncated = false

    /// - Parameter body: `nil` ends the stream with the HEADERS frame (a GET).
    package init(headers: HPACKHeaders, body: ByteBuffer?, deadline: NIODeadline) {
        self.headers = headers
        self.body = body
        self.deadline = deadline
    }

    /// Sets the continuation; called once by the sending task, before the request is submitted.
    package func arm(_ continuation: CheckedContinuation<HTTP2StreamOutcome, Never>) {
        self.continuation = continuation
    }

    /// Whether the outcome is still to be delivered.
    var isOpen: Bool { self.continuation != nil }

    /// Delivers the outcome; later calls do nothing.
    package func finish(_ outcome: HTTP2StreamOutcome) {
        guard let continuation = self.continuation else { return }
        self.continuation = nil
        continuation.resume(returning: outcome)
    }
}

/// Who the client talks to, for messages and logs, and how much of an answer it keeps.
package struct HTTP2Peer: Sendable {
    /// The server as messages name it: "APNs", "the relay".
    package var name: String
    /// The prefix of log metadata keys: `apns` gives `apns.connection`.
    package var logPrefix: String
    /// What to check when the server does not negotiate `h2`.
    package var alpnHint: String
    /// The largest response body read; a larger one ends the stream (`bodyTruncated`).
    package var maximumResponseBody: Int
    /// A reason read from a GOAWAY frame's debug data, for the log.
    package var goAwayReason: @Sendable (ByteBuffer) -> String?

    package init(
        name: String,
        logPrefix: String,
        alpnHint: String,
        maximumResponseBody: Int,
        goAwayReason: @escaping @Sendable (ByteBuffer) -> String? = { _ in nil }
    ) {
        self.name = name
        self.logPrefix = logPrefix
        self.alpnHint = alpnHint
        self.maximumResponseBody = maximumResponseBody
        self.goAwayReason = goAwayReason
    }
}
