import ConnectionGuard
import Foundation
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL
import NIOTLS

/// The client's end of one HTTP/2 connection, on the connection's event loop, directly above
/// `NIOHTTP2Handler` (no per-stream child channels).
///
/// Requests wait in a FIFO queue until the server's `SETTINGS_MAX_CONCURRENT_STREAMS` leaves room; each then gets the
/// next odd stream ID, a HEADERS and a DATA frame. Frames written in one event-loop task (a drained inbox, or the
/// streams freed by one read) go out with one flush. Answers are matched to requests by stream ID.
///
/// Failure handling, by what the server can have seen:
/// - never sent (queued when the connection went away): ``HTTP2StreamOutcome/notSent``, sent on the next connection;
/// - `RST_STREAM(REFUSED_STREAM)`, or above a GOAWAY's last stream ID: ``HTTP2StreamOutcome/refused(_:)``;
/// - sent and then lost (reset, connection closed): ``HTTP2StreamOutcome/failed(_:)``;
/// - no answer by the request's deadline: the stream is reset, ``HTTP2StreamOutcome/timedOut``.
final class HTTP2ClientHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// The connection-level receive window kept open for answers (HTTP/2's initial 65,535 bytes).
    static let connectionWindow = 65_535
    /// The receive window of each stream, announced in this client's SETTINGS: a whole answer of
    /// ``HTTP2Peer/maximumResponseBody`` fits, so no stream waits for a WINDOW_UPDATE this handler does not send.
    static func initialStreamWindow(for peer: HTTP2Peer) -> Int {
        max(65_535, min(peer.maximumResponseBody + 16 * 1024, (1 << 31) - 1))
    }

    private let connection: HTTP2ClientConnection
    private let peer: HTTP2Peer
    private let connectTimeout: TimeAmount
    private let logger: Logger
    private let onEstablished: @Sendable () -> Void

    private var context: ChannelHandlerContext?
    private var pending = CircularBuffer<HTTP2PendingRequest>(initialCapacity: 64)
    private var active: [HTTP2StreamID: HTTP2PendingRequest] = [:]
    private var nextStreamID: Int32 = 1
    /// The server's limit; one stream until its SETTINGS say otherwise (APNs starts at one with token auth).
    private var peerMaxStreams = 1
    private var established = false
    private var goAwayLastStreamID: HTTP2StreamID?
    private var closeReason: String?
    /// The TLS handshake failed because the server's certificate is not trusted.
    private var untrusted = false
    private var tornDown = false
    /// This handler owns the connection's inbox (its channel is the one that became active).
    private var attached = false
    private var inRead = false
    private var needsFlush = false
    private var opening = false
    private var streamTimer: Scheduled<Void>?
    private var handshakeTimer: Scheduled<Void>?

    init(
        connection: HTTP2ClientConnection,
        peer: HTTP2Peer,
        connectTimeout: TimeAmount,
        logger: Logger,
        onEstablished: @escaping @Sendable () -> Void
    ) {
        self.connection = connection
        self.peer = peer
        self.connectTimeout = connectTimeout
        self.logger = logger
        self.onEstablished = onEstablished
    }

    // MARK: Requests from the client (scheduled on the event loop by HTTP2ClientConnection)

    /// Moves queued requests onto streams, as far as the server's stream limit allows, and flushes once.
    func drainInbox() {
        let requests = self.connection.takeInbox()
        if self.goAwayLastStreamID != nil {
            // This connection opens no more streams: the requests go on the next one.
            for request in requests { request.finish(.notSent) }
            return
        }
        for request in requests where request.isOpen {
            self.pending.append(request)
        }
        self.openStreams()
        self.armStreamTimer()
    }

    /// Cancels one request: drops it from the inbox or the queue, or resets its stream. Acts only on requests that went
    /// through the inbox (whose continuation was published by its lock); anything else is already finished or not
    /// submitted yet.
    func cancel(_ request: HTTP2PendingRequest) {
        if let streamID = request.streamID {
            guard self.active.removeValue(forKey: streamID) != nil else { return }
            self.write(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel)))
        } else if let index = self.pending.firstIndex(where: { $0 === request }) {
            self.pending.remove(at: index)
        } else if !self.connection.removeFromInbox(request) {
            return
        }
        request.finish(.cancelled)
        self.openStreams()
        self.flushIfNeeded()
    }

    /// Ends the connection for a reason found outside the pipeline (a failed connect).
    func fail(_ reason: String) {
        self.closeReason = self.closeReason ?? reason
        if let context = self.context, context.channel.isActive {
            context.close(promise: nil)
        } else {
            self.teardown()
        }
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    /// The channel is going away. Normally `channelInactive` has torn the connection down already; but a channel
    /// closed before it became active (the connect attempt lost a race with `shutdown()`, or was closed from the
    /// connect promise's callback, where NIO fires no `channelInactive`) ends here, and what it holds must still
    /// get an outcome.
    func handlerRemoved(context: ChannelHandlerContext) {
        self.teardown()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        // Only the channel that becomes active owns the connection's inbox: with several addresses, the connect
        // attempts that lose are closed before they become active.
        guard self.connection.attach(self) else {
            context.fireChannelActive()
            context.close(promise: nil)
            return
        }
        self.attached = true
        let timeout = self.connectTimeout
        self.handshakeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            guard !self.established else { return }
            self.fail("the TLS and HTTP/2 handshake with \(self.peer.name) did not complete within \(timeout)")
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.teardown()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let event as StreamClosedEvent:
            self.streamClosed(event.streamID, reason: event.reason)
        case let event as NIOHTTP2WindowUpdatedEvent where event.streamID == .rootStream:
            if let window = event.inboundWindowSize, window <= Self.connectionWindow / 2 {
                let increment = Self.connectionWindow - window
                self.write(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment)))
                if !self.inRead { self.flushIfNeeded() }
            }
        case let tls as TLSUserEvent:
            if case .handshakeCompleted(let negotiated) = tls { self.handshakeCompleted(negotiated: negotiated) }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func handshakeCompleted(negotiated: String?) {
        guard negotiated == "h2" else {
            self.fail(
                "the server negotiated \(negotiated.map { "'\($0)'" } ?? "no protocol") instead of HTTP/2 "
                    + "(ALPN h2); \(self.peer.alpnHint)"
            )
            return
        }
        self.established = true
        self.handshakeTimer?.cancel()
        self.handshakeTimer = nil
        self.onEstablished()
        self.drainInbox()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.inRead = true
        let frame = self.unwrapInboundIn(data)
        if frame.streamID == .rootStream {
            self.rootFrame(frame.payload)
            return
        }
        guard let request = self.active[frame.streamID] else { return }
        switch frame.payload {
        case .headers(let headers):
            if request.status.map({ (100..<200).contains($0) }) ?? true,
                let status = headers.headers.first(name: ":status").flatMap({ Int($0) })
            {
                request.status = status
                request.responseHeaders = headers.headers
            }
            if headers.endStream { self.complete(frame.streamID, request) }
        case .data(let data):
            if case .byteBuffer(var bytes) = data.data, bytes.readableBytes > 0 {
                let room = self.peer.maximumResponseBody - (request.responseBody?.readableBytes ?? 0)
                if bytes.readableBytes > room {
                    // Too large to keep: the answer ends here, and the rest is refused with a reset instead of
                    // waiting on a stream window it would outgrow.
                    request.bodyTruncated = true
                    self.complete(frame.streamID, request)
                    self.write(HTTP2Frame(streamID: frame.streamID, payload: .rstStream(.cancel)))
                    return
                }
                if var slice = bytes.readSlice(length: bytes.readableBytes) {
                    if request.responseBody == nil {
                        request.responseBody = slice
                    } else {
                        request.responseBody!.writeBuffer(&slice)
                    }
                }
            }
            if data.endStream { self.complete(frame.streamID, request) }
        case .rstStream(let code):
            self.active.removeValue(forKey: frame.streamID)
            request.finish(
                code == .refusedStream
                    ? .refused("\(self.peer.name) refused the stream (REFUSED_STREAM)")
                    : .failed("\(self.peer.name) reset the stream (\(code))")
            )
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.inRead = false
        self.openStreams()
        self.flushIfNeeded()
        if self.goAwayLastStreamID != nil, self.active.isEmpty, context.channel.isActive {
            context.close(promise: nil)
        }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            if let request = self.active.removeValue(forKey: streamError.streamID) {
                request.finish(.failed("HTTP/2 stream error: \(Self.describe(streamError.baseError))"))
            }
            return
        }
        if !self.established, case .untrustedCertificate = TransportFailure.classify(error) { self.untrusted = true }
        self.closeReason = self.closeReason ?? Self.describe(error)
        context.close(promise: nil)
    }

    // MARK: Streams

    private func rootFrame(_ payload: HTTP2Frame.FramePayload) {
        switch payload {
        case .settings(.settings(let settings)):
            var limit: Int?
            for setting in settings where setting.parameter == .maxConcurrentStreams { limit = setting.value }
            if let limit {
                self.peerMaxStreams = limit
            } else if self.peerMaxStreams == 1 && !self.established {
                self.peerMaxStreams = 100
            }
        case .goAway(let lastStreamID, let errorCode, let opaqueData):
            self.goAway(lastStreamID: lastStreamID, errorCode: errorCode, debugData: opaqueData)
        default:
            break
        }
    }

    private func goAway(lastStreamID: HTTP2StreamID, errorCode: HTTP2ErrorCode, debugData: ByteBuffer?) {
        self.goAwayLastStreamID = min(lastStreamID, self.goAwayLastStreamID ?? lastStreamID)
        self.connection.retire()
        let reason = debugData.flatMap(self.peer.goAwayReason)
        self.logger.notice(
            "\(self.peer.name) sent GOAWAY; later requests go on a new connection",
            metadata: [
                "\(self.peer.logPrefix).connection": "\(self.connection.id)",
                "\(self.peer.logPrefix).goaway.code": "\(errorCode)",
                "\(self.peer.logPrefix).goaway.reason": "\(reason ?? "-")",
                "\(self.peer.logPrefix).goaway.lastStreamID": "\(lastStreamID)",
            ]
        )
        for (streamID, request) in self.active where streamID > lastStreamID {
            self.active.removeValue(forKey: streamID)
            request.finish(
                .refused("\(self.peer.name) sent GOAWAY\(reason.map { " (\($0))" } ?? "") before processing the stream")
            )
        }
        while let request = self.pending.popFirst() { request.finish(.notSent) }
    }

    private func streamClosed(_ streamID: HTTP2StreamID, reason: HTTP2ErrorCode?) {
        if let request = self.active.removeValue(forKey: streamID) {
            if reason == .refusedStream {
                request.finish(.refused("\(self.peer.name) refused the stream (REFUSED_STREAM)"))
            } else if let last = self.goAwayLastStreamID, streamID > last {
                request.finish(.refused("\(self.peer.name) sent GOAWAY before processing the stream"))
            } else {
                request.finish(
                    .failed(
                        "the stream closed before \(self.peer.name) answered (\(reason.map { "\($0)" } ?? "no error"))"
                    )
                )
            }
        }
        if !self.inRead {
            self.openStreams()
            self.flushIfNeeded()
        }
    }

    private func complete(_ streamID: HTTP2StreamID, _ request: HTTP2PendingRequest) {
        self.active.removeValue(forKey: streamID)
        guard let status = request.status else {
            request.finish(.failed("\(self.peer.name) ended the stream without a status"))
            return
        }
        request.finish(
            .answered(
                status: status,
                headers: request.responseHeaders ?? HPACKHeaders(),
                body: request.responseBody ?? ByteBuffer(),
                bodyTruncated: request.bodyTruncated
            )
        )
    }

    /// Opens streams for queued requests while the server's limit allows. Writes without flushing.
    private func openStreams() {
        guard self.established, self.goAwayLastStreamID == nil, !self.tornDown, !self.opening else { return }
        self.opening = true
        defer { self.opening = false }
        while self.active.count < self.peerMaxStreams, let request = self.pending.first {
            guard request.isOpen else {
                self.pending.removeFirst()
                continue
            }
            guard self.nextStreamID < Int32.max - 2 else {
                // Stream IDs are spent (2^30 requests): finish the open streams here, send the rest on a new connection.
                self.connection.retire()
                self.goAwayLastStreamID = HTTP2StreamID(Int(self.nextStreamID))
                while let queued = self.pending.popFirst() { queued.finish(.notSent) }
                return
            }
            self.pending.removeFirst()
            let streamID = HTTP2StreamID(Int(self.nextStreamID))
            self.nextStreamID += 2
            request.streamID = streamID
            self.active[streamID] = request
            if let body = request.body {
                self.write(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: request.headers))))
                self.write(
                    HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true)))
                )
            } else {
                self.write(
                    HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: request.headers, endStream: true)))
                )
            }
        }
        if !self.inRead { self.flushIfNeeded() }
    }

    private func write(_ frame: HTTP2Frame) {
        guard let context = self.context else { return }
        context.write(self.wrapOutboundOut(frame), promise: nil)
        self.needsFlush = true
    }

    private func flushIfNeeded() {
        guard self.needsFlush, let context = self.context else { return }
        self.needsFlush = false
        context.flush()
    }

    // MARK: Deadlines

    /// Keeps one timer at the earliest deadline of the requests this connection holds.
    private func armStreamTimer() {
        guard self.streamTimer == nil, !self.tornDown, let context = self.context else { return }
        var earliest: NIODeadline?
        for request in self.pending where request.isOpen {
            earliest = min(earliest ?? request.deadline, request.deadline)
        }
        for request in self.active.values { earliest = min(earliest ?? request.deadline, request.deadline) }
        guard let earliest else { return }
        self.streamTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: earliest) {
            self.streamTimer = nil
            self.expire(now: .now())
        }
    }

    private func expire(now: NIODeadline) {
        if self.pending.contains(where: { $0.deadline <= now }) {
            var kept = CircularBuffer<HTTP2PendingRequest>(initialCapacity: self.pending.count)
            while let request = self.pending.popFirst() {
                if request.deadline <= now {
                    request.finish(.timedOut)
                } else {
                    kept.append(request)
                }
            }
            self.pending = kept
        }
        for (streamID, request) in self.active where request.deadline <= now {
            self.active.removeValue(forKey: streamID)
            self.write(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel)))
            request.finish(.timedOut)
        }
        self.openStreams()
        self.flushIfNeeded()
        self.armStreamTimer()
    }

    // MARK: Teardown

    private func teardown() {
        guard !self.tornDown else { return }
        self.tornDown = true
        self.streamTimer?.cancel()
        self.streamTimer = nil
        self.handshakeTimer?.cancel()
        self.handshakeTimer = nil
        // A handler that never owned the inbox holds no requests; the connect failure reaches the inbox instead.
        guard self.attached else { return }
        let reason = self.closeReason ?? "the connection closed"
        let unsent: HTTP2StreamOutcome =
            self.established ? .notSent : self.untrusted ? .untrustedCertificate(reason) : .connectFailed(reason)
        for request in self.connection.closeInbox(with: unsent) { request.finish(unsent) }
        while let request = self.pending.popFirst() { request.finish(unsent) }
        let active = self.active
        self.active = [:]
        for (streamID, request) in active {
            if let last = self.goAwayLastStreamID, streamID > last {
                request.finish(.refused("\(self.peer.name) sent GOAWAY before processing the stream"))
            } else {
                request.finish(.failed("the connection closed before \(self.peer.name) answered: \(reason)"))
            }
        }
        if self.established {
            self.logger.info(
                "HTTP/2 connection to \(self.peer.name) closed",
                metadata: [
                    "\(self.peer.logPrefix).connection": "\(self.connection.id)",
                    "\(self.peer.logPrefix).close.reason": "\(reason)",
                ]
            )
        }
    }

    /// What went wrong, for people: no error type dumps, no source paths (NIOSSL's errors carry BoringSSL's).
    static func describe(_ error: any Error) -> String {
        if error is NIOHTTP2Errors.StreamError || error is any NIOHTTP2Error { return "an HTTP/2 protocol error" }
        return TransportFailure.classify(error).message
    }
}

@available(*, unavailable)
extension HTTP2ClientHandler: Sendable {}
