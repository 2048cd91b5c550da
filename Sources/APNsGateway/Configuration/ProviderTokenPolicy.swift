/// The rules the gateway applies to provider authentication tokens (JWTs).
///
/// The defaults are Apple's: a token is valid for one hour after its `iat`, and a connection may switch to a new
/// token at most every twenty minutes. Apple does not say whether `iat` must be a JSON number; APNSwift sends a
/// string and APNs takes it, so both are accepted unless ``issuedAtFormat`` says otherwise.
public struct ProviderTokenPolicy: Sendable, Hashable {
    /// Which JSON types the `iat` claim may have.
    public struct IssuedAtFormat: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case numberOrString
            case numberOnly
        }

        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// A JSON number or a string of decimal digits (APNs' observed behaviour; the default).
        public static let numberOrString = IssuedAtFormat(.numberOrString)
        /// A JSON number only: a string `iat` is `403 InvalidProviderToken`.
        public static let numberOnly = IssuedAtFormat(.numberOnly)

        var acceptsString: Bool { self.value == .numberOrString }
        public var description: String { self.value.rawValue }
    }

    /// How long after `iat` a token is accepted; older tokens get `403 ExpiredProviderToken`.
    public var tokenLifetime: Duration
    /// The shortest time between two different tokens on one connection; sooner gets
    /// `429 TooManyProviderTokenUpdates`. Measured by the gateway's clock from when the previous token was first
    /// accepted on that connection.
    public var minimumRefreshInterval: Duration
    /// How far in the future `iat` may lie (clock skew); further is `403 InvalidProviderToken`.
    public var allowedFutureSkew: Duration
    /// Which JSON types `iat` may have.
    public var issuedAtFormat: IssuedAtFormat

    /// Creates a policy; the defaults are Apple's rules.
    ///
    /// - Parameters:
    ///   - tokenLifetime: Token validity after `iat` (default one hour).
    ///   - minimumRefreshInterval: Minimum time between new tokens on a connection (default twenty minutes).
    ///   - allowedFutureSkew: Tolerated clock skew for `iat` in the future (default five minutes).
    ///   - issuedAtFormat: Accepted `iat` types (default number or string).
    public init(
        tokenLifetime: Duration = .seconds(3600),
        minimumRefreshInterval: Duration = .seconds(1200),
        allowedFutureSkew: Duration = .seconds(300),
        issuedAtFormat: IssuedAtFormat = .numberOrString
    ) {
        self.tokenLifetime = tokenLifetime
        self.minimumRefreshInterval = minimumRefreshInterval
        self.allowedFutureSkew = allowedFutureSkew
        self.issuedAtFormat = issuedAtFormat
    }

    func validate() throws(GatewayError) {
        guard self.tokenLifetime > .zero else {
            throw .invalidConfiguration("tokenPolicy.tokenLifetime must be positive (Apple uses one hour)")
        }
        guard self.minimumRefreshInterval >= .zero, self.allowedFutureSkew >= .zero else {
            throw .invalidConfiguration("tokenPolicy intervals must not be negative")
        }
    }
}

extension Duration {
    /// The duration in seconds as a floating-point number.
    var seconds: Double {
        let (secs, attos) = self.components
        return Double(secs) + Double(attos) / 1e18
    }
}
