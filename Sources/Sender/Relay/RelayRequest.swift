public import RelayClient

/// What a device asks of the relay, for saying what to do when it refuses.
public enum RelayRequest: Sendable {
    case publish, register, tokens

    /// The sender's error for a refusal of this request: what happened and what to do. Nothing is stored when the
    /// relay refuses (docs/RELAY.md), so none of these says "queued" or "send again".
    public func error(_ error: RelayError, userID: String) -> SenderError {
        let base = RelaySender.senderError(error, userID: userID, tokenPath: nil)
        let answer = "the relay answered \(error.code.rawValue): \(error.message)"
        switch base.code {
        case .relayUnavailable:
            let wait = error.retryAfterSeconds.map { " (in \($0) s)" } ?? ""
            return SenderError(.relayUnavailable, "\(answer). Nothing was changed at the relay: run this again\(wait)")
        case .relayRefused, .unknownRecipient:
            return SenderError(
                base.code == .unknownRecipient ? .relayRefused : base.code,
                "\(answer). \(self.advice(error.code, userID))"
            )
        default:
            // Codes of their own (a TLS failure naming --relay-ca, a refused token) already say what to do.
            return base
        }
    }

    private func advice(_ code: RelayError.Code, _ userID: String) -> String {
        switch (self, code) {
        case (.publish, .signingKeyChanged):
            return "Nothing was stored: the relay keeps the user key it first saw for \(userID), and this list is "
                + "signed by another; publish a list signed by that key, or ask the relay's operator to reset the account"
        case (.publish, .listRollback):
            return "Nothing was stored: the relay holds a newer list of \(userID); publish the current card (the one "
                + "the last `device add`, `device remove` or `rotate` wrote)"
        case (.publish, .listVersionReused):
            return "Nothing was stored: the relay holds another list under this version; publish the current card, "
                + "made on the device holding the user key"
        case (_, .unknownUser):
            return "Nothing was stored: the relay has no device list of \(userID); publish it first (e2ee-send relay "
                + "publish --card <your card>)"
        case (_, .unknownDevice):
            return "Nothing was stored: this device is not in \(userID)'s list at the relay; sign it in on the device "
                + "holding the user key (e2ee-send device add) and publish that list first"
        case (_, .staleAuthorization):
            return "Nothing was stored: this device's clock and the relay's differ by more than 5 minutes; set the "
                + "clock and run this again"
        case (_, .replayedAuthorization):
            return "Nothing was stored: run this again (a new request is signed each time)"
        case (_, .badAuthorization):
            return "Nothing was stored: the relay does not accept this device's signature; check that --identity is "
                + "the device signed in to the published list"
        default:
            return "Nothing was stored at the relay"
        }
    }
}
