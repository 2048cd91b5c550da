public import E2EECore
import Foundation
import NIOSSL

/// Everything an ``APNsClient`` needs: where to connect, how to authenticate, and how patient to be.
///
/// Every value is checked when the configuration is made, so a client built from it cannot be misconfigured: the
/// token refresh interval must lie within 20...60 minutes, the window and timeouts must be positive, a custom
/// endpoint must be an `https` URL without query or credentials and its trusted CA file must hold PEM certificates.
public struct APNsClientConfiguration: Sendable {
    /// Where pushes go.
    public let environment: APNsEndpoint
    /// The `kid` of the provider token: the 10-character ID of the `.p8` key.
    public let keyID: String
    /// The `iss` of the provider token: the 10-character team ID.
    public let teamID: String
    /// The `.p8` key that signs provider tokens.
    public let signingKey: APNsSigningKey
    /// How old a provider token may get before it is replaced (20...60 minutes).
    public let tokenRefreshInterval: Duration
    /// The most pushes in flight at once on the connection.
    public let window: Int
    /// How long one HTTP/2 stream may wait for APNs' answer before it is reset and reported as a timeout.
    public let streamTimeout: Duration
    /// How long establishing the TLS connection may take.
    public let connectTimeout: Duration
    /// When 429/5xx answers are retried.
    public let retryPolicy: RetryPolicy
    /// The inactive-token registry the client consults and updates.
    public let tokenRegistry: TokenRegistry
    /// The wall clock for provider token `iat` and age.
    public let clock: WallClock

    /// The certificates of a custom trusted CA, loaded from ``APNsEndpoint/trustedCAPEMPath``.
    let trustedCertificates: [NIOSSLCertificate]?

    /// Checks and assembles a configuration.
    ///
    /// - Parameters:
    ///   - environment: Development, production, or a custom `https` endpoint.
    ///   - keyID: The `.p8` key's ID (letters and digits).
    ///   - teamID: The team ID (letters and digits).
    ///   - signingKey: The `.p8` key.
    ///   - tokenRefreshInterval: Provider token lifetime, 20...60 minutes (default 50).
    ///   - window: The most pushes in flight at once, at least 1 (default 100).
    ///   - streamTimeout: Per-stream answer timeout, positive (default 10 s).
    ///   - connectTimeout: Connection timeout, positive (default 10 s).
    ///   - retryPolicy: The retry schedule (default ``RetryPolicy/default``).
    ///   - tokenRegistry: The inactive-token registry (default: a new in-memory one).
    ///   - clock: The wall clock (default: the system's).
    /// - Throws: ``SenderError/Code/invalidConfiguration`` or ``SenderError/Code/trustedCAUnreadable``.
    public init(
        environment: APNsEndpoint,
        keyID: String,
        teamID: String,
        signingKey: APNsSigningKey,
        tokenRefreshInterval: Duration = APNsProviderTokenManager.defaultRefreshInterval,
        window: Int = 100,
        streamTimeout: Duration = .seconds(10),
        connectTimeout: Duration = .seconds(10),
        retryPolicy: RetryPolicy = .default,
        tokenRegistry: TokenRegistry = TokenRegistry(),
        clock: WallClock = .system
    ) throws(SenderError) {
        try APNsProviderTokenManager.validate(refreshInterval: tokenRefreshInterval)
        for (name, value) in [("keyID", keyID), ("teamID", teamID)] {
            guard !value.isEmpty, value.utf8.allSatisfy({ Self.isAlphanumeric($0) }) else {
                throw SenderError(
                    .invalidConfiguration,
                    "\(name) must be the letters-and-digits ID shown in the Apple developer account"
                )
            }
        }
        guard window >= 1 else {
            throw SenderError(.invalidConfiguration, "window must be at least 1 push in flight")
        }
        guard streamTimeout > .zero, connectTimeout > .zero else {
            throw SenderError(.invalidConfiguration, "streamTimeout and connectTimeout must be positive")
        }
        guard let url = URL(string: environment.baseURL), url.scheme == "https", url.host != nil,
            url.query == nil, url.fragment == nil, url.user == nil
        else {
            throw SenderError(
                .invalidConfiguration,
                "the APNs base URL must look like https://host[:port][/prefix] with no query; got \(environment.baseURL)"
            )
        }
        if let path = environment.trustedCAPEMPath {
            do {
                let certificates = try NIOSSLCertificate.fromPEMFile(path)
                guard !certificates.isEmpty else {
                    throw SenderError(.trustedCAUnreadable, "no certificate in \(path)")
                }
                self.trustedCertificates = certificates
            } catch {
                throw SenderError(
                    .trustedCAUnreadable,
                    "cannot load the trusted CA certificates from \(path); give a PEM file with the CA certificate"
                )
            }
        } else {
            self.trustedCertificates = nil
        }
        self.environment = environment
        self.keyID = keyID
        self.teamID = teamID
        self.signingKey = signingKey
        self.tokenRefreshInterval = tokenRefreshInterval
        self.window = window
        self.streamTimeout = streamTimeout
        self.connectTimeout = connectTimeout
        self.retryPolicy = retryPolicy
        self.tokenRegistry = tokenRegistry
        self.clock = clock
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
    }
}
