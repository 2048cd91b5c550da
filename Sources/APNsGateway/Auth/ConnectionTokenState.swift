import Locking

/// The provider-token state of one HTTP/2 connection: its team, its current token and when that was accepted.
///
/// Shared by the connection's concurrent streams, so it lives in a `PThreadMutex`.
final class ConnectionTokenState: Sendable {
    private struct State {
        var teamID: String?
        var token: String?
        var issuedAt: Int64 = 0
        var acceptedAt: Double = 0
    }

    private let state = PThreadMutex(State())

    init() {}

    /// The `iat` of `authorization` when it is the token this connection already accepted.
    func issuedAtIfCurrent(_ authorization: String) -> Int64? {
        self.state.withLock { $0.token == authorization ? $0.issuedAt : nil }
    }

    /// Makes a verified token the connection's current one, unless it belongs to another team than the
    /// connection's first token (`UnrelatedKeyIdInToken`) or replaces the previous token too soon
    /// (`TooManyProviderTokenUpdates`).
    func accept(
        _ authorization: String,
        teamID: String,
        issuedAt: Int64,
        now: Double,
        minimumRefreshInterval: Double
    ) -> APNsRejection? {
        self.state.withLock { state in
            if state.token == authorization { return nil }
            if let team = state.teamID, team != teamID { return .unrelatedKeyIDInToken }
            if state.token != nil, now - state.acceptedAt < minimumRefreshInterval {
                return .tooManyProviderTokenUpdates
            }
            state.teamID = teamID
            state.token = authorization
            state.issuedAt = issuedAt
            state.acceptedAt = now
            return nil
        }
    }
}
