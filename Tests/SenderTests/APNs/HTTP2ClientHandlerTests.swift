import Logging
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import NIOSSL
import NIOTLS
import Synchronization
import Testing

@testable import HTTP2Client
@testable import Sender

/// The HTTP/2 stream logic of the transport under the APNs client and the relay client, frame by frame, with no
/// network: what goes out (and how many flushes), and what each server frame makes of the requests in flight. The
/// handler speaks to APNs here (``APNsClient/peer``).
@Suite("HTTP/2 client connection handler: frames in, frames out")
struct HTTP2ClientHandlerTests {
    /// Counts flushes that reach the bottom of the pipeline.
    final class FlushCounter: ChannelOutboundHandler, Sendable {
        typealias OutboundIn = HTTP2Frame
        private let count = Atomic<Int>(0)
        var flushes: Int { self.count.load(ordering: .relaxed) }

        func flush(context: ChannelHandlerContext) {
            self.count.add(1, ordering: .relaxed)
            context.flush()
        }
    }

    /// A connection handler on a testing channel, with a server whose SETTINGS allow `limit` streams.
    struct Harness: Sendable {
        let channel: NIOAsyncTestingChannel
        let connection: HTTP2ClientConnection
        let counter: FlushCounter

        init(limit: Int) async throws {
            let channel = NIOAsyncTestingChannel()
            let connection = HTTP2ClientConnection(id: 1, eventLoop: channel.eventLoop)
            let counter = FlushCounter()
            try await channel.testingEventLoop.executeInContext {
                try channel.pipeline.syncOperations.addHandler(counter)
                try channel.pipeline.syncOperations.addHandler(
                    HTTP2ClientHandler(
                        connection: connection,
                        peer: APNsClient.peer,
                        connectTimeout: .seconds(60),
                        logger: Logger(label: "test"),
                        onEstablished: {}
                    )
                )
            }
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443))
            let settings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: limit)]
            try await channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings(settings))))
            self.channel = channel
            self.connection = connection
            self.counter = counter
        }

        /// Submits a push and returns the task that gets its outcome; returns once the push is submitted.
        func submit(body: ByteBuffer? = ByteBuffer(string: "{}")) async throws -> Task<HTTP2StreamOutcome, Never> {
            let submitted = Atomic<Bool>(false)
            let connection = self.connection
            let task = Task {
                await withCheckedContinuation { (continuation: CheckedContinuation<HTTP2StreamOutcome, Never>) in
                    var headers = HPACKHeaders()
                    headers.add(name: ":method", value: "POST")
                    headers.add(name: ":path", value: "/3/device/abcd")
                    let push = HTTP2PendingRequest(
                        headers: headers,
                        body: body,
                        deadline: .now() + .seconds(600)
                    )
                    push.arm(continuation)
                    connection.submit(push)
                    submitted.store(true, ordering: .releasing)
                }
            }
            while !submitted.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
            return task
        }

        /// TLS says `h2`: the handler starts sending.
        func establish() async throws {
            try await self.channel.testingEventLoop.executeInContext {
                self.channel.pipeline.fireUserInboundEventTriggered(
                    TLSUserEvent.handshakeCompleted(negotiatedProtocol: "h2")
                )
            }
        }

        /// The next `count` frames written, as (stream ID, kind), waiting for each.
        func frames(_ count: Int) async throws -> [(Int, String)] {
            var frames: [(Int, String)] = []
            for _ in 0..<count {
                let frame = try await self.channel.waitForOutboundWrite(as: HTTP2Frame.self)
                let kind: String
                switch frame.payload {
                case .headers(let headers): kind = headers.endStream ? "HEADERS+END" : "HEADERS"
                case .data(let data): kind = data.endStream ? "DATA+END" : "DATA"
                case .rstStream(let code): kind = "RST_STREAM(\(code))"
                default: kind = "other"
                }
                frames.append((Int(frame.streamID), kind))
            }
            return frames
        }

        /// Whether no frame is waiting to be read.
        func nothingWritten() async throws -> Bool {
            try await self.channel.readOutbound(as: HTTP2Frame.self) == nil
        }

        func answer(_ streamID: Int, status: Int) async throws {
            let headers = HPACKHeaders([(":status", "\(status)"), ("apns-id", "id-\(streamID)")])
            try await self.channel.writeInbound(
                HTTP2Frame(
                    streamID: HTTP2StreamID(streamID),
                    payload: .headers(.init(headers: headers, endStream: true))
                )
            )
        }
    }

    static func describe(_ outcome: HTTP2StreamOutcome) -> String {
        switch outcome {
        case .answered(let status, _, _, _): "answered \(status)"
        case .timedOut: "timedOut"
        case .refused: "refused"
        case .notSent: "notSent"
        case .failed: "failed"
        case .connectFailed: "connectFailed"
        case .untrustedCertificate: "untrustedCertificate"
        case .cancelled: "cancelled"
        }
    }

    @Test("a request without a body is one HEADERS frame that ends the stream; the answer's headers reach the caller")
    func bodilessRequest() async throws {
        let harness = try await Harness(limit: 10)
        let task = try await harness.submit(body: nil)
        try await harness.establish()
        let frames = try await harness.frames(1)
        #expect(frames.map(\.0) == [1])
        #expect(frames.map(\.1) == ["HEADERS+END"])
        try await harness.answer(1, status: 204)
        guard case .answered(let status, let headers, let body, let truncated) = await task.value else {
            Issue.record("the request was not answered")
            return
        }
        #expect(status == 204)
        #expect(headers.first(name: "apns-id") == "id-1")
        #expect(body.readableBytes == 0)
        #expect(!truncated)
    }

    @Test("pushes queued before the handshake leave together: one flush, no more streams than the server allows")
    func batchedWithinLimit() async throws {
        let harness = try await Harness(limit: 3)
        var tasks: [Task<HTTP2StreamOutcome, Never>] = []
        for _ in 0..<5 { tasks.append(try await harness.submit()) }
        #expect(try await harness.nothingWritten(), "nothing is sent before TLS has negotiated h2")
        let flushesBefore = harness.counter.flushes

        try await harness.establish()
        let first = try await harness.frames(6)
        #expect(first.map(\.0) == [1, 1, 3, 3, 5, 5])
        #expect(first.map(\.1) == ["HEADERS", "DATA+END", "HEADERS", "DATA+END", "HEADERS", "DATA+END"])
        #expect(harness.counter.flushes == flushesBefore + 1, "three streams, one flush")

        // Two answers in one read free two streams: the two queued pushes go out, again with one flush.
        let flushesMid = harness.counter.flushes
        try await harness.channel.testingEventLoop.executeInContext {
            let pipeline = harness.channel.pipeline
            for streamID in [1, 3] {
                let headers = HPACKHeaders([(":status", "200")])
                pipeline.fireChannelRead(
                    HTTP2Frame(
                        streamID: HTTP2StreamID(streamID),
                        payload: .headers(.init(headers: headers, endStream: true))
                    )
                )
            }
            pipeline.fireChannelReadComplete()
        }
        let second = try await harness.frames(4)
        #expect(second.map(\.0) == [7, 7, 9, 9])
        #expect(harness.counter.flushes == flushesMid + 1)

        for streamID in [5, 7, 9] { try await harness.answer(streamID, status: 200) }
        var outcomes: [String] = []
        for task in tasks { outcomes.append(Self.describe(await task.value)) }
        #expect(outcomes == Array(repeating: "answered 200", count: 5))
    }

    @Test("RST_STREAM: REFUSED_STREAM may be sent again, any other code is a failure that may have been delivered")
    func streamResets() async throws {
        let harness = try await Harness(limit: 10)
        try await harness.establish()
        let refused = try await harness.submit()
        let reset = try await harness.submit()
        let answered = try await harness.submit()
        #expect(try await harness.frames(6).map(\.0) == [1, 1, 3, 3, 5, 5])
        try await harness.channel.writeInbound(HTTP2Frame(streamID: 1, payload: .rstStream(.refusedStream)))
        try await harness.channel.writeInbound(HTTP2Frame(streamID: 3, payload: .rstStream(.internalError)))
        try await harness.answer(5, status: 410)
        #expect(Self.describe(await refused.value) == "refused")
        #expect(Self.describe(await reset.value) == "failed")
        #expect(Self.describe(await answered.value) == "answered 410")
    }

    @Test("GOAWAY: streams above its last stream ID are refused, queued pushes are not sent, the connection retires")
    func goAway() async throws {
        let harness = try await Harness(limit: 2)
        let processed = try await harness.submit()
        let unprocessed = try await harness.submit()
        let queued = try await harness.submit()
        try await harness.establish()
        #expect(try await harness.frames(4).map(\.0) == [1, 1, 3, 3])
        #expect(harness.connection.isUsable)

        try await harness.channel.writeInbound(
            HTTP2Frame(
                streamID: .rootStream,
                payload: .goAway(
                    lastStreamID: 1,
                    errorCode: .noError,
                    opaqueData: ByteBuffer(string: #"{"reason":"Shutdown"}"#)
                )
            )
        )
        #expect(Self.describe(await unprocessed.value) == "refused")
        #expect(Self.describe(await queued.value) == "notSent")
        #expect(!harness.connection.isUsable)
        #expect(harness.channel.isActive, "stream 1 is still being answered")

        // A push submitted now never reaches the wire of this connection.
        let late = try await harness.submit()
        #expect(try await harness.nothingWritten())

        try await harness.answer(1, status: 200)
        #expect(Self.describe(await processed.value) == "answered 200")
        #expect(!harness.channel.isActive, "closed once its last stream was answered")
        #expect(Self.describe(await late.value) == "notSent")
    }

    @Test("the connection closing mid-stream fails the sent pushes and leaves the queued ones unsent")
    func connectionLost() async throws {
        let harness = try await Harness(limit: 1)
        let sent = try await harness.submit()
        let queued = try await harness.submit()
        try await harness.establish()
        #expect(try await harness.frames(2).map(\.0) == [1, 1])
        try await harness.channel.close()
        #expect(Self.describe(await sent.value) == "failed")
        #expect(Self.describe(await queued.value) == "notSent")
    }

    @Test("a connection that never completes its handshake answers every push connectFailed")
    func neverEstablished() async throws {
        let harness = try await Harness(limit: 10)
        let push = try await harness.submit()
        harness.connection.connectFailed("cannot connect to 127.0.0.1:1: connection refused")
        #expect(Self.describe(await push.value) == "connectFailed")
        #expect(!harness.connection.isUsable)
    }
}
