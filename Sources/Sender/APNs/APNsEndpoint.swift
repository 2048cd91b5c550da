/// Where an ``APNsClient`` sends pushes: Apple's service in one ``APNsEnvironment``, or a custom APNs-compatible
/// server.
///
/// The custom case points at a local gateway (tests, demos) and may pin trust to a CA certificate file instead of
/// the system roots.
public enum APNsEndpoint: Sendable, Hashable {
    /// Apple's service in `environment`.
    case apple(APNsEnvironment)
    /// Any APNs-compatible server.
    ///
    /// - Parameters:
    ///   - baseURL: `https://host[:port]`, optionally with a path prefix (a reverse proxy); requests go to
    ///     `<baseURL>/3/device/<token>`.
    ///   - trustedCAPEMPath: A PEM file whose certificates become the ONLY trust roots, or `nil` for the system roots.
    case custom(baseURL: String, trustedCAPEMPath: String?)

    /// Apple's development service (`api.sandbox.push.apple.com`).
    public static let development = APNsEndpoint.apple(.development)
    /// Apple's production service (`api.push.apple.com`).
    public static let production = APNsEndpoint.apple(.production)

    /// The base URL requests are sent to, without a trailing slash.
    public var baseURL: String {
        switch self {
        case .apple(let environment): environment.baseURL
        case .custom(let baseURL, _):
            baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        }
    }

    /// The PEM file of trusted CA certificates, for ``custom(baseURL:trustedCAPEMPath:)`` only.
    public var trustedCAPEMPath: String? {
        switch self {
        case .apple: nil
        case .custom(_, let path): path
        }
    }
}
