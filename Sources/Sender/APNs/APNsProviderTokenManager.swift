public import E2EECore
import Foundation
public import Logging

/// Issues the provider token for one connection: cached, refreshed on a fixed interval, regenerated at most once
/// when APNs calls it expired.
///
/// APNs refuses a token older than one hour (403 `ExpiredProviderToken`) and a new token less than 20 minutes after
/// the previous one on the same connection (429 `TooManyProviderTokenUpdates`). Token churn is the most reported bug
/// in APNs clients, so the rules here are strict:
/// - A token is reused until it is ``refreshInterval`` old (20 to 60 minutes; default 50), then replaced.
/// - When APNs answers `ExpiredProviderToken` for the current token, ONE new token is issued (however many pushes
///   were in flight with the old one); pushes that used an older token just retry with the current one.
/// - That forced regeneration happens at most once per 20 minutes; if the fresh token is called expired too (a
///   skewed clock), no further tokens are made and the push reports the 403.
///
/// Time comes from the injected `now` closure, so tests move the clock instead of sleeping.
public actor APNsProviderTokenManager {
    /// The shortest refresh interval APNs tolerates (a new token sooner answers 429).
    public static let minimumRefreshInterval: Duration = .seconds(20 * 60)
    /// The longest refresh interval (APNs expires tokens after one hour).
    public static let maximumRefreshInterval: Duration = .seconds(60 * 60)
    /// The default refresh interval: 50 minutes, well inside both limits.
    public static let defaultRefreshInterval: Duration = .seconds(50 * 60)

    private let keyID: String
    private let teamID: String
    private let key: APNsSigningKey
    /// How old a token may get before it is replaced.
    public let refreshInterval: Duration
    private let clock: WallClock
    private let logger: Logger

    private var current: APNsProviderToken?
    private var issuedAtDate: Date?
    private var lastForcedRegeneration: Date?
    /// How many tokens this manager has signed (for tests and diagnostics).
    public private(set) var tokensIssued = 0

    /// Creates a manager; it signs nothing until the first ``currentToken()``.
    ///
    /// - Parameters:
    ///   - keyID: The `kid` header (the key's 10-character ID).
    ///   - teamID: The `iss` claim (the 10-character team ID).
    ///   - key: The `.p8` signing key.
    ///   - refreshInterval: The token lifetime before replacement; must be within 20...60 minutes.
    ///   - clock: The wall clock used for `iat` and token age.
    ///   - logger: Receives token fingerprints and refresh events, never the token.
    /// - Throws: ``SenderError/Code/invalidConfiguration`` when `refreshInterval` is outside 20...60 minutes.
    public init(
        keyID: String,
        teamID: String,
        key: APNsSigningKey,
        refreshInterval: Duration = APNsProviderTokenManager.defaultRefreshInterval,
        clock: WallClock = .system,
        logger: Logger
    ) throws(SenderError) {
        try Self.validate(refreshInterval: refreshInterval)
        self.keyID = keyID
        self.teamID = teamID
        self.key = key
        self.refreshInterval = refreshInterval
        self.clock = clock
        self.logger = logger
    }

    /// Checks a refresh interval against APNs' limits.
    ///
    /// - Parameter refreshInterval: The candidate interval.
    /// - Throws: ``SenderError/Code/invalidConfiguration`` when outside 20...60 minutes.
    public static func validate(refreshInterval: Duration) throws(SenderError) {
        guard (minimumRefreshInterval...maximumRefreshInterval).contains(refreshInterval) else {
            throw SenderError(
                .invalidConfiguration,
                "token refresh interval \(refreshInterval) is outside 20...60 minutes: APNs rejects tokens older "
                    + "than 60 minutes and new tokens sooner than 20 minutes; use e.g. 50 minutes"
            )
        }
    }

    /// The token to send now: the cached one, or a new one if none exists or the cached one is due for refresh.
    ///
    /// - Returns: A signed token.
    public func currentToken() -> APNsProviderToken {
        let now = self.clock.date
        if let current, let issued = self.issuedAtDate, Self.age(from: issued, to: now) < self.refreshInterval {
            return current
        }
        return self.issue(at: now, why: self.current == nil ? "first token" : "refresh interval reached")
    }

    /// Reports that APNs answered 403 `ExpiredProviderToken` for `token`, and returns the token to retry with.
    ///
    /// - Parameter token: The token the rejected request carried.
    /// - Returns: A newer token to retry once with, or `nil` when retrying cannot help (the current token was
    ///   itself force-regenerated less than 20 minutes ago).
    public func tokenRejectedAsExpired(_ token: APNsProviderToken) -> APNsProviderToken? {
        guard let current else { return self.currentToken() }
        if current.generation != token.generation {
            // Another push already replaced it: retry with the newer one, do not sign again.
            return current
        }
        let now = self.clock.date
        if let last = self.lastForcedRegeneration, Self.age(from: last, to: now) < Self.minimumRefreshInterval {
            self.logger.warning(
                "APNs called a freshly regenerated provider token expired; not signing another (check the clock)",
                metadata: ["apns.jwt.sha256": "\(current.fingerprint)"]
            )
            return nil
        }
        self.lastForcedRegeneration = now
        return self.issue(at: now, why: "APNs answered ExpiredProviderToken")
    }

    private func issue(at now: Date, why: String) -> APNsProviderToken {
        let token = APNsProviderToken.sign(
            keyID: self.keyID,
            teamID: self.teamID,
            issuedAt: now,
            key: self.key,
            generation: self.tokensIssued + 1
        )
        self.tokensIssued += 1
        self.current = token
        self.issuedAtDate = now
        self.logger.info(
            "issued APNs provider token",
            metadata: [
                "apns.jwt.sha256": "\(token.fingerprint)",
                "apns.jwt.generation": "\(token.generation)",
                "apns.jwt.reason": "\(why)",
            ]
        )
        return token
    }

    private static func age(from start: Date, to end: Date) -> Duration {
        .milliseconds(Int64((end.timeIntervalSince(start) * 1000).rounded(.down)))
    }
}
