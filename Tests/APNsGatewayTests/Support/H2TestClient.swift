import Foundation
import Locking
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

/// A raw HTTP/2-over-TLS client for the gateway tests: it trusts only the gateway's `ca.pem`, verifies the
/// hostname `localhost`, sends any header list (duplicates included) and records the connection-level frames it
/// receives (SETTINGS, GOAWAY).
final class H2TestClient: Sendable {
    struct Response: Sendable {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]

        func header(_ name: String) -> String? { self.headers.first { $0.name == name }?.value }
        var bodyText: String { String(decoding: self.body, as: UTF8.self) }
        var reason: String? {
            guard let object = try? JSONSerialization.jsonObject(with: Data(self.body)) as? [String: Any] else {
                return nil
            }
            return object["reason"] as? String
        }
        var timestamp: Int64? {
            guard let object = try? JSONSerialization.jsonObject(with: Data(self.body)) as? [String: Any] else {
                return nil
            }
            return (object["timestamp"] as? NSNumber)?.int64Value
        }
    }

    struct StreamReset: Error, Equatable {
        var code: HTTP2ErrorCode
    }

    struct StreamClosedWithoutResponse: Error {}

    struct ResponseTimedOut: Error {}

    let channel: any Channel
    let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    let frames: RootFrameRecorder

    private init(channel: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, frames: RootFrameRecorder) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.frames = frames
    }

    /// Connects to the gateway on 127.0.0.1, trusting only `caPath`.
    static func connect(port: Int, caPath: String) async throws -> H2TestClient {
        let ca = try NIOSSLCertificate.fromPEMFile(caPath)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(ca)
        tls.applicationProtocols = ["h2"]
        tls.minimumTLSVersion = .tlsv12
        let sslContext = try NIOSSLContext(configuration: tls)
        let recorder = RootFrameRecorder()
        let (channel, multiplexer) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(30))
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: "localhost"))
                    let multiplexer = try sync.configureHTTP2Pipeline(
                        mode: .client,
                        connectionConfiguration: .init(),
                        streamConfiguration: .init()
                    ) { stream in stream.eventLoop.makeSucceededVoidFuture() }
                    try sync.addHandler(RootFrameHandler(recorder: recorder))
                    return (channel, multiplexer)
                }
            }
        return H2TestClient(channel: channel, multiplexer: multiplexer, frames: recorder)
    }

    /// Sends one request and waits for its complete response.
    ///
    /// - Parameters:
    ///   - headers: Regular headers, in order (duplicates allowed).
    ///   - path: `:path`.
    ///   - method: `:method`.
    ///   - body: The body; `nil` ends the stream with the headers.
    ///   - timeout: Fails with ``ResponseTimedOut`` (and resets the stream) after this long. The default only keeps
    ///     a test from hanging: tests assert statuses and bodies, never how fast they come. Under ThreadSanitizer with
    ///     every suite in parallel on 2 cores, a request to a local gateway has gone unanswered for over 60 s while
    ///     the tests' gateways start and handshake (CI, 2026-11-26: DeviceRegistryTests; the same test took 90.8 s in
    ///     a passing TSan run), so the default is five minutes.
    func send(
        path: String = "/3/device/\(testToken)",
        method: String = "POST",
        headers: [(String, String)],
        body: [UInt8]?,
        timeout: TimeAmount = .seconds(300)
    ) async throws -> Response {
        let promise = self.channel.eventLoop.makePromise(of: Response.self)
        let timer = self.channel.eventLoop.scheduleTask(in: timeout) { promise.fail(ResponseTimedOut()) }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        let stream = try await self.multiplexer.createStreamChannel { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(ResponseCollector(promise: promise))
            }
        }.get()
        let requestHeaders: [(String, String)] =
            [(":method", method), (":scheme", "https"), (":authority", "localhost"), (":path", path)] + headers
        let endWithHeaders = body == nil
        try await stream.writeAndFlush(
            HTTP2Frame.FramePayload.headers(.init(headers: .init(requestHeaders), endStream: endWithHeaders))
        )
        if let body {
            try await stream.writeAndFlush(
                HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(bytes: body)), endStream: true))
            )
        }
        return try await promise.futureResult.get()
    }

    func close() async {
        try? await self.channel.close()
    }
}

/// Records root-stream frames the client receives.
final class RootFrameRecorder: Sendable {
    struct Snapshot: Sendable {
        var maxConcurrentStreamsValues: [Int] = []
        var goAwayReasons: [String] = []
        var goAwayLastStreamIDs: [Int] = []
    }

    private let state = PThreadMutex(Snapshot())

    var snapshot: Snapshot { self.state.withLock { $0 } }

    func record(_ frame: HTTP2Frame) {
        switch frame.payload {
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                self.state.withLock { $0.maxConcurrentStreamsValues.append(setting.value) }
            }
        case .goAway(let lastStreamID, _, let opaqueData):
            let text = opaqueData.map { String(buffer: $0) } ?? ""
            self.state.withLock {
                $0.goAwayReasons.append(text)
                $0.goAwayLastStreamIDs.append(Int(lastStreamID))
            }
        default:
            break
        }
    }

    /// Waits (polling, generously) until `condition` holds for the snapshot.
    func wait(
        timeout: Duration = .seconds(30),
        until condition: (Snapshot) -> Bool
    ) async -> Snapshot {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let snapshot = self.snapshot
            if condition(snapshot) { return snapshot }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return self.snapshot
    }
}

private final class RootFrameHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    let recorder: RootFrameRecorder

    init(recorder: RootFrameRecorder) { self.recorder = recorder }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.recorder.record(self.unwrapInboundIn(data))
    }
}

@available(*, unavailable)
extension RootFrameHandler: Sendable {}

private final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    private let promise: EventLoopPromise<H2TestClient.Response>
    private var response = H2TestClient.Response(status: 0, headers: [], body: [])
    private var done = false

    init(promise: EventLoopPromise<H2TestClient.Response>) { self.promise = promise }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .headers(let headers):
            for (name, value, _) in headers.headers {
                if name == ":status" {
                    self.response.status = Int(value) ?? -1
                } else {
                    self.response.headers.append((name: name, value: value))
                }
            }
            if headers.endStream { self.finish() }
        case .data(let data):
            if case .byteBuffer(var buffer) = data.data, let bytes = buffer.readBytes(length: buffer.readableBytes) {
                self.response.body += bytes
            }
            if data.endStream { self.finish() }
        case .rstStream(let code):
            self.fail(H2TestClient.StreamReset(code: code))
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.fail(H2TestClient.StreamClosedWithoutResponse())
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.fail(error)
    }

    private func finish() {
        guard !self.done else { return }
        self.done = true
        self.promise.succeed(self.response)
    }

    private func fail(_ error: any Error) {
        guard !self.done else { return }
        self.done = true
        self.promise.fail(error)
    }
}

@available(*, unavailable)
extension ResponseCollector: Sendable {}
