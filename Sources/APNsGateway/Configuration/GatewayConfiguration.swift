public import ConnectionGuard
public import E2EECore
import Foundation
public import PushTransport

/// Everything the local APNs gateway needs to know: where to listen, what to accept, and which faults to inject.
///
/// The defaults describe a permissive development gateway on an ephemeral loopback port: any well-formed device
/// token is accepted, no topic and no provider key is registered yet (so every request is refused until you add
/// at least one of each), 1,000 concurrent streams after the first valid token, no faults, and the wall clock.
public struct GatewayConfiguration: Sendable {
    /// The address to bind; loopback by default.
    public var host: String
    /// The port to bind; `0` picks an ephemeral port, reported by ``APNsGatewayServer/start()``.
    public var port: Int
    /// The directory that receives `ca.pem` (the certificate a client trusts) and `server.pem` at start.
    public var tlsDirectory: String
    /// Which APNs host this gateway stands in for.
    public var environment: APNsEnvironment
    /// The bundle ids that may be pushed to; `apns-topic` is the bundle id plus the push type's suffix.
    public var topics: Set<String>
    /// The provider keys whose JWTs are accepted.
    public var providerKeys: [RegisteredProviderKey]
    /// The state of device tokens (open or strict registry, unregistered and expired tokens).
    public var devices: DeviceRegistry
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` advertised once a request with a valid token has succeeded.
    public var maxConcurrentStreams: Int
    /// Faults to inject (error answers, delays, silent streams, stream-limit drops, GOAWAY).
    public var faults: FaultInjection
    /// The provider-token rules (token lifetime, refresh interval, `iat` format).
    public var tokenPolicy: ProviderTokenPolicy
    /// The clock used for token expiry, the 20-minute rule, 410 timestamps and `received_at_ms`.
    public var clock: WallClock
    /// Socket deadlines and the connection cap (docs/GATEWAY.md "Connections"): a minute for the handshake and for the
    /// first request (the gateway runs beside tests and demos that load the machine, under sanitizers too), two for a
    /// request, and an idle connection is kept an hour, as APNs keeps a provider's connection.
    public var connections = ConnectionLimits(
        handshakeTimeout: .seconds(60),
        requestHeadTimeout: .seconds(60),
        idleTimeout: .seconds(3600),
        requestTimeout: .seconds(120)
    )

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - host: The address to bind (default `127.0.0.1`).
    ///   - port: The port to bind (default `0`: ephemeral).
    ///   - tlsDirectory: The directory that receives `ca.pem` and `server.pem`.
    ///   - environment: The environment this gateway stands in for (default development).
    ///   - topics: The allowed bundle ids.
    ///   - providerKeys: The registered provider keys.
    ///   - devices: The device-token registry (default: open, every well-formed token accepted).
    ///   - maxConcurrentStreams: The stream limit after the first valid token (default 1,000).
    ///   - faults: Fault injection (default ``FaultInjection/none``).
    ///   - tokenPolicy: The provider-token rules (default: Apple's one hour and twenty minutes).
    ///   - clock: The clock (default: the system's; a test's moves by hand).
    public init(
        host: String = "127.0.0.1",
        port: Int = 0,
        tlsDirectory: String,
        environment: APNsEnvironment = .development,
        topics: Set<String> = [],
        providerKeys: [RegisteredProviderKey] = [],
        devices: DeviceRegistry = DeviceRegistry(),
        maxConcurrentStreams: Int = 1000,
        faults: FaultInjection = .none,
        tokenPolicy: ProviderTokenPolicy = ProviderTokenPolicy(),
        clock: WallClock = .system
    ) {
        self.host = host
        self.port = port
        self.tlsDirectory = tlsDirectory
        self.environment = environment
        self.topics = topics
        self.providerKeys = providerKeys
        self.devices = devices
        self.maxConcurrentStreams = maxConcurrentStreams
        self.faults = faults
        self.tokenPolicy = tokenPolicy
        self.clock = clock
    }

    /// The path of the CA certificate (PEM) that clients trust: `<tlsDirectory>/ca.pem`.
    public var caCertificatePath: String { (self.tlsDirectory as NSString).appendingPathComponent("ca.pem") }

    /// The path of the server certificate chain (PEM): `<tlsDirectory>/server.pem`.
    public var serverCertificatePath: String {
        (self.tlsDirectory as NSString).appendingPathComponent("server.pem")
    }

    /// Checks that the configuration is usable.
    ///
    /// - Throws: ``GatewayError/Code/invalidConfiguration`` naming the first bad field and how to fix it.
    public func validate() throws(GatewayError) {
        guard (0...65_535).contains(self.port) else {
            throw .invalidConfiguration("port \(self.port) is out of range: use 0 (ephemeral) to 65535")
        }
        guard !self.tlsDirectory.isEmpty else {
            throw .invalidConfiguration("tlsDirectory is empty: give a directory where ca.pem can be written")
        }
        guard (1...Int(UInt32.max)).contains(self.maxConcurrentStreams) else {
            throw .invalidConfiguration("maxConcurrentStreams must be at least 1 (APNs advertises about 1000)")
        }
        for topic in self.topics where topic.isEmpty || topic.contains(where: \.isWhitespace) {
            throw .invalidConfiguration("topic \"\(topic)\" is not a bundle id: use e.g. com.example.app")
        }
        try self.faults.validate()
        try self.tokenPolicy.validate()
        if let problem = self.connections.problem() { throw .invalidConfiguration(problem) }
    }
}
