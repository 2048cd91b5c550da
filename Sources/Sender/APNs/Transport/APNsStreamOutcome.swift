import NIOCore
import NIOHPACK
import NIOHTTP2

/// What became of one push handed to an ``APNsConnection``: APNs' answer, or why there is none.
///
/// The cases separate what may have reached APNs from what provably did not, because only the latter can be sent
/// again without risking a duplicate (a call push that rings twice).
enum APNsStreamOutcome: Sendable {
    /// APNs answered: the `:status`, the `apns-id` header, and the body (empty for 200).
    case answered(status: Int, apnsID: String?, body: ByteBuffer)
    /// No answer within the per-stream timeout; the stream was reset. The push may have been delivered.
    case timedOut
    /// APNs did not process the stream: `RST_STREAM(REFUSED_STREAM)`, or a stream above a GOAWAY's last stream ID
    /// (RFC 9113 §6.8, §8.7). Sending it again cannot duplicate it.
    case refused(String)
    /// The push never left this process: the connection went away before its stream was opened. It is sent on the
    /// next connection without counting an attempt.
    case notSent
    /// The stream was sent and then lost (connection closed, stream reset); the push may have been processed.
    case failed(String)
    /// No connection could be established; nothing was sent.
    case connectFailed(String)
    /// The server's TLS certificate does not verify against the trusted CA: nothing was sent, and sending again cannot
    /// help until the configuration changes.
    case untrustedCertificate(String)
    /// The sending task was cancelled; the stream (if any) was reset.
    case cancelled
}

/// One push on its way through a connection: the encoded request, its deadline, and the continuation that gets its
/// outcome.
///
/// `@unchecked Sendable`: the request fields are immutable. The sending task sets the continuation once, before it
/// hands the push to ``APNsConnection/submit(_:)``, whose lock publishes it to the event loop. From then on
/// `continuation`, `streamID` and the response fields are read and written only on the connection's event loop
/// (by ``APNsConnectionHandler``), which resumes the continuation exactly once and then clears it.
final class APNsPendingPush: @unchecked Sendable {
    let headers: HPACKHeaders
    let body: ByteBuffer
    let deadline: NIODeadline
    private var continuation: CheckedContinuation<APNsStreamOutcome, Never>?

    // Event-loop state.
    var streamID: HTTP2StreamID?
    var status: Int?
    var apnsID: String?
    var responseBody: ByteBuffer?

    init(headers: HPACKHeaders, body: ByteBuffer, deadline: NIODeadline) {
        self.headers = headers
        self.body = body
        self.deadline = deadline
    }

    /// Sets the continuation; called once by the sending task, before the push is submitted.
    func arm(_ continuation: CheckedContinuation<APNsStreamOutcome, Never>) {
        self.continuation = continuation
    }

    /// Whether the outcome is still to be delivered.
    var isOpen: Bool { self.continuation != nil }

    /// Delivers the outcome; later calls do nothing.
    func finish(_ outcome: APNsStreamOutcome) {
        guard let continuation = self.continuation else { return }
        self.continuation = nil
        continuation.resume(returning: outcome)
    }
}
