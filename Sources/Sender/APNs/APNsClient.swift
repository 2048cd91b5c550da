import Foundation
import HTTP2Client
import Locking
public import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// Sends pushes to APNs over one HTTP/2 connection with token authentication.
///
/// The client keeps one TLS connection (ALPN `h2`) to its endpoint and multiplexes up to
/// ``APNsClientConfiguration/window`` pushes on it, never more streams than the server's
/// `SETTINGS_MAX_CONCURRENT_STREAMS`. The transport sits directly on swift-nio-http2: no per-stream channels, and
/// the frames of all pushes queued in one event-loop tick leave with one flush. Each push gets a provider token from the client's
/// ``APNsProviderTokenManager``, a per-stream timeout, retries for 429/5xx under the ``RetryPolicy``, and one retry
/// with a regenerated token on 403 `ExpiredProviderToken`. A 410 marks the device token inactive in the
/// ``TokenRegistry``; later pushes to it are refused without a request.
///
/// APNs errors are results: ``send(_:)-(APNsRequest)`` never throws. Call ``shutdown()`` before dropping the client.
public final class APNsClient: Sendable {
    /// The configuration the client was built with.
    public let configuration: APNsClientConfiguration
    let pool: HTTP2ClientPool
    let tokens: APNsProviderTokenManager
    let window: InFlightWindow
    let logger: Logger
    /// Always `POST` in production; the internal initializer lets tests provoke APNs' 405 answer end to end.
    let method: String
    private let state: PThreadMutex<State>

    private struct State {
        var isShutDown = false
        /// APNs allows one stream per connection until a request with a valid token succeeds.
        var tokenConfirmed = false
    }

    /// Creates a client; the connection opens with the first push.
    ///
    /// - Parameters:
    ///   - configuration: A checked configuration.
    ///   - logger: Receives per-push metadata (status, reason, apns-id, JWT fingerprint; no part of a device token);
    ///     never the JWT, the key or the body.
    public convenience init(configuration: APNsClientConfiguration, logger: Logger) {
        self.init(configuration: configuration, logger: logger, method: "POST")
    }

    /// The test seam: `method` is the HTTP method name to send (only tests pass anything but `POST`).
    init(configuration: APNsClientConfiguration, logger: Logger, method: String) {
        self.method = method
        self.configuration = configuration
        self.logger = logger
        self.window = InFlightWindow(size: configuration.window)
        self.state = PThreadMutex(State())
        // The configuration's initializer already validated the refresh interval, so this cannot throw.
        self.tokens = try! APNsProviderTokenManager(
            keyID: configuration.keyID,
            teamID: configuration.teamID,
            key: configuration.signingKey,
            refreshInterval: configuration.tokenRefreshInterval,
            clock: configuration.clock,
            logger: logger
        )

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["h2"]
        if let certificates = configuration.trustedCertificates {
            tls.trustRoots = .certificates(certificates)
        }
        self.pool = HTTP2ClientPool(
            target: HTTP2ClientPool.Target(baseURL: configuration.environment.baseURL),
            peer: Self.peer,
            // A client TLS context from a configuration without key files or custom callbacks does not fail.
            sslContext: try! NIOSSLContext(configuration: tls),
            group: MultiThreadedEventLoopGroup.singleton,
            connectTimeout: TimeAmount(configuration.connectTimeout),
            logger: logger
        )
    }

    /// The inactive-token registry this client consults.
    public var tokenRegistry: TokenRegistry { self.configuration.tokenRegistry }

    /// How many provider tokens this client has signed so far.
    public var providerTokensIssued: Int {
        get async { await self.tokens.tokensIssued }
    }

    /// How many connections this client has opened: HTTP/2 ones, and HTTP/1.1 ones (always 0: a server that does not
    /// negotiate `h2` is refused, as APNs always speaks HTTP/2). Normally one HTTP/2 connection for the client's
    /// whole life.
    public var connectionsOpened: (http2: Int, http1: Int) {
        (self.pool.connectionsEstablished, 0)
    }

    /// Sends one push and reports what happened.
    ///
    /// - Parameter request: The request; its `authorization` header, if any, is replaced by the provider token.
    /// - Returns: APNs' answer (after retries), or the local reason there is none.
    public func send(_ request: APNsRequest) async -> APNsResult {
        await self.deliver(request)
    }

    /// Sends many pushes concurrently on the one connection, at most ``APNsClientConfiguration/window`` at a time.
    ///
    /// Until APNs has accepted a provider token on this client, the first push is sent alone (APNs allows a
    /// single stream before that); the rest then follow concurrently.
    ///
    /// - Parameter requests: The requests, in any number.
    /// - Returns: One result per request, in the order of `requests`.
    public func send(_ requests: [APNsRequest]) async -> [APNsResult] {
        guard !requests.isEmpty else { return [] }
        var results = [APNsResult?](repeating: nil, count: requests.count)
        var start = 0
        if !self.state.withLock({ $0.tokenConfirmed }) {
            results[0] = await self.deliver(requests[0])
            start = 1
        }
        let limit = self.configuration.window
        await withTaskGroup(of: (Int, APNsResult).self) { group in
            var next = start
            while next < requests.count && next - start < limit {
                let index = next
                group.addTask { (index, await self.deliver(requests[index])) }
                next += 1
            }
            while let (index, result) = await group.next() {
                results[index] = result
                if next < requests.count {
                    let index = next
                    group.addTask { (index, await self.deliver(requests[index])) }
                    next += 1
                }
            }
        }
        return results.enumerated().map { index, result in
            // Every index below requests.count was scheduled exactly once above.
            result ?? APNsResult(deviceToken: requests[index].deviceToken, attempts: 0, localOutcome: .cancelled)
        }
    }

    /// Closes the connection; later sends return the local outcome `clientShutdown`.
    public func shutdown() async {
        let wasShutDown = self.state.withLock { state in
            defer { state.isShutDown = true }
            return state.isShutDown
        }
        guard !wasShutDown else { return }
        await self.pool.shutdown()
    }

    var isShutDown: Bool { self.state.withLock { $0.isShutDown } }

    func markTokenConfirmed() {
        self.state.withLock { $0.tokenConfirmed = true }
    }
}
