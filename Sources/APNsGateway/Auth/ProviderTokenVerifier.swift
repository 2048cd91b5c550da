import Foundation
import PushTransport

/// Checks the `authorization` header of a request against the registered provider keys and the rules APNs applies
/// per connection: one team per connection, token lifetime, and at most one new token per refresh interval.
///
/// Signature checks run once per distinct token on a connection; a token already accepted there is only checked
/// for expiry.
struct ProviderTokenVerifier: Sendable {
    let keys: [RegisteredProviderKey]
    let environment: APNsEnvironment
    let policy: ProviderTokenPolicy

    /// Authenticates one request on a connection.
    ///
    /// - Parameters:
    ///   - authorization: The `authorization` header, if any.
    ///   - connection: The connection's token state, updated when a new token is accepted.
    ///   - now: The gateway's clock, in seconds since 1970.
    /// - Returns: `nil` when the request may proceed, else the 403 or 429 answer.
    func authenticate(
        _ authorization: String?,
        connection: ConnectionTokenState,
        now: Double
    ) -> APNsRejection? {
        guard let authorization, !authorization.isEmpty else { return .missingProviderToken }
        if let issuedAt = connection.issuedAtIfCurrent(authorization) {
            return self.isExpired(issuedAt: issuedAt, now: now) ? .expiredProviderToken : nil
        }
        guard
            let token = ProviderToken(
                authorization: authorization,
                acceptStringIssuedAt: self.policy.issuedAtFormat.acceptsString
            )
        else {
            return .invalidProviderToken
        }
        guard let key = self.keys.first(where: { $0.keyID == token.keyID && $0.teamID == token.teamID }) else {
            return .invalidProviderToken
        }
        if let keyEnvironment = key.environment, keyEnvironment != self.environment {
            return .badEnvironmentKeyIDInToken
        }
        guard token.isSigned(by: key.publicKey) else { return .invalidProviderToken }
        if Double(token.issuedAt) > now + self.policy.allowedFutureSkew.seconds { return .invalidProviderToken }
        if self.isExpired(issuedAt: token.issuedAt, now: now) { return .expiredProviderToken }
        return connection.accept(
            authorization,
            teamID: token.teamID,
            issuedAt: token.issuedAt,
            now: now,
            minimumRefreshInterval: self.policy.minimumRefreshInterval.seconds
        )
    }

    private func isExpired(issuedAt: Int64, now: Double) -> Bool {
        now - Double(issuedAt) > self.policy.tokenLifetime.seconds
    }
}
