/// Apple's two APNs environments. A device token belongs to one of them (the one the app build was signed for), and
/// a push must go to that one: the other answers 400 `BadDeviceToken`.
///
/// The one type for the environment everywhere a token's environment is named: a sender's `--apns-environment`, a
/// device's registration at the relay, the relay's clients, the local gateway. The raw values are the names on the
/// command line and in JSON.
public enum APNsEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    /// `api.sandbox.push.apple.com`: apps run from Xcode (development signing).
    case development
    /// `api.push.apple.com`: App Store, TestFlight and ad-hoc builds.
    case production

    /// Apple's base URL for this environment, without a trailing slash.
    public var baseURL: String {
        switch self {
        case .development: "https://api.sandbox.push.apple.com"
        case .production: "https://api.push.apple.com"
        }
    }
}
