/// Where pushes go: Apple's development or production service, or a custom APNs-compatible server.
///
/// A device token belongs to one environment; sending it to the other answers 400 `BadDeviceToken`. The custom
/// case points at a local gateway (tests, demos) and may pin trust to a CA certificate file instead of the system
/// roots.
public enum APNsEnvironment: Sendable, Hashable {
    /// `https://api.sandbox.push.apple.com` (apps signed for development).
    case development
    /// `https://api.push.apple.com` (App Store, TestFlight and ad-hoc builds).
    case production
    /// Any APNs-compatible server.
    ///
    /// - Parameters:
    ///   - baseURL: `https://host[:port]`, optionally with a path prefix (a reverse proxy); requests go to
    ///     `<baseURL>/3/device/<token>`.
    ///   - trustedCAPEMPath: A PEM file whose certificates become the ONLY trust roots, or `nil` for the system roots.
    case custom(baseURL: String, trustedCAPEMPath: String?)

    /// The base URL requests are sent to, without a trailing slash.
    public var baseURL: String {
        switch self {
        case .development: "https://api.sandbox.push.apple.com"
        case .production: "https://api.push.apple.com"
        case .custom(let baseURL, _):
            baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        }
    }

    /// The PEM file of trusted CA certificates, for ``custom(baseURL:trustedCAPEMPath:)`` only.
    public var trustedCAPEMPath: String? {
        switch self {
        case .development, .production: nil
        case .custom(_, let path): path
        }
    }
}
