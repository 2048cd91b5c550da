import ConnectionGuard
import NIOCore
import NIOHTTP2
import PushTransport

/// Collects one request on an HTTP/2 stream, has the ``RequestProcessor`` decide, and writes the answer.
///
/// Works on raw frame payloads rather than an HTTP/1 conversion so that repeated headers stay visible
/// (`DuplicateHeaders`). The body is kept up to ``GatewayRequest/bodyCap`` bytes and counted in full.
final class GatewayStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let processor: RequestProcessor
    private let connection: GatewayConnection
    private let environment: APNsEnvironment
    private let tracker: ConnectionTracker
    /// From the request's HEADERS to its answer: the connection's deadlines wait, the request timeout runs.
    private var activity: ConnectionActivity?
    private var request = GatewayRequest(method: nil, path: nil, headers: [], body: [], bodyLength: 0)
    private var headersSeen = false
    private var complete = false

    init(
        processor: RequestProcessor,
        connection: GatewayConnection,
        environment: APNsEnvironment,
        tracker: ConnectionTracker
    ) {
        self.processor = processor
        self.connection = connection
        self.environment = environment
        self.tracker = tracker
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.endActivity()
        context.fireChannelInactive()
    }

    private func endActivity() {
        self.activity?.finish()
        self.activity = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .headers(let headers):
            if !self.headersSeen {
                self.headersSeen = true
                self.activity = ConnectionActivity.start(on: context.channel, tracker: self.tracker)
                self.collect(headers)
            }
            if headers.endStream { self.requestComplete(context: context) }
        case .data(let data):
            if case .byteBuffer(var buffer) = data.data {
                self.request.bodyLength += buffer.readableBytes
                let room = GatewayRequest.bodyCap - self.request.body.count
                if room > 0, let bytes = buffer.readBytes(length: min(room, buffer.readableBytes)) {
                    self.request.body += bytes
                }
            }
            if data.endStream { self.requestComplete(context: context) }
        default:
            break
        }
    }

    private func collect(_ headers: HTTP2Frame.FramePayload.Headers) {
        for (name, value, _) in headers.headers {
            switch name {
            case ":method": self.request.method = value
            case ":path": self.request.path = value
            case _ where name.hasPrefix(":"): break
            default: self.request.headers.append((name: name.lowercased(), value: value))
            }
        }
    }

    private func requestComplete(context: ChannelHandlerContext) {
        guard !self.complete else { return }
        self.complete = true
        // From here on the time is the gateway's (fault delays, the sink's fsync), not the client's.
        self.activity?.received()
        let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)) ?? 0
        guard self.connection.admit(streamID: streamID) == .admit else {
            self.endActivity()
            context.writeAndFlush(self.wrapOutboundOut(.rstStream(.refusedStream)), promise: nil)
            return
        }
        self.processor.process(self.request, connection: self.connection, on: context.eventLoop)
            .assumeIsolated().whenSuccess { response in
                self.respond(context: context, response)
            }
    }

    private func respond(context: ChannelHandlerContext, _ response: GatewayResponse) {
        // A silent stream (a fault: APNs never answers) stays open, as a hung APNs stream does; it no longer counts
        // as a request in progress, so the request timeout does not reset it.
        self.endActivity()
        if response.silent {
            self.connection.streamFinished()
            return
        }
        var fields = [(":status", String(response.rejection?.status ?? 200)), ("apns-id", response.apnsID)]
        if let rejection = response.rejection {
            let body = ByteBuffer(string: rejection.jsonBody)
            fields.append(("content-type", "application/json"))
            fields.append(("content-length", String(body.readableBytes)))
            context.write(self.wrapOutboundOut(.headers(.init(headers: .init(fields)))), promise: nil)
            context.write(self.wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
        } else {
            if self.environment == .development {
                fields.append(("apns-unique-id", RandomID.uuidText()))
            }
            // Raise the stream limit before the 200 leaves, so the client sees the new limit first.
            self.connection.requestSucceeded()
            context.write(self.wrapOutboundOut(.headers(.init(headers: .init(fields), endStream: true))), promise: nil)
        }
        context.flush()
        self.connection.streamFinished()
    }
}

@available(*, unavailable)
extension GatewayStreamHandler: Sendable {}
