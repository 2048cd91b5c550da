public import E2EECore
import Foundation

/// The JSON line `e2ee-send --deliver`, `--relay` and `batch --deliver|--relay` print per push.
///
/// With `--relay`, `ok` means the relay accepted and queued the push (it delivers it to APNs later): `relay_status`
/// is the relay's HTTP answer (202), `relay_push_id` its id for the push (also the `apns-id` it delivers with,
/// copied into `apns_id`), `relay_duplicate` true when the relay had already accepted this submit; `status` and the
/// other APNs fields stay empty. A device the relay cannot deliver to is not sealed to: its line has `ok` false and
/// `skipped` naming why (`unregistered`: APNs said the token is gone; `none`: the device never registered), and does
/// not change the exit status. Without `--relay`, the sender's own device without a push address in its list is
/// skipped the same way (`no-push-address`): its copy of a message to its own user is only its echo.
public struct SendResultLine: Sendable, Codable, Hashable {
    /// 1-based input line (batch) or 1.
    public var line: Int
    /// The recipient device the push was sealed to (one result per device, docs/PROTOCOL.md §11.7); absent for a
    /// line that named no device (a bad line, a refused recipient, `e2ee-send deliver`).
    public var device: String?
    public var ok: Bool
    public var deviceToken: String?
    public var apnsID: String?
    public var status: Int?
    public var reason: String?
    public var timestamp: Int64?
    public var attempts: Int?
    /// The local outcome code (tokenInactive, timeout...) when APNs did not answer.
    public var local: String?
    /// The message id (so the caller can match receipts); never the content.
    public var messageID: String?
    /// For a request that could not be built: the error code and message.
    public var error: String?
    public var errorMessage: String?
    /// `--relay`: the relay's id for the accepted push (the `apns-id` it delivers with).
    public var relayPushID: String?
    /// `--relay`: the HTTP status of the relay's answer to the submit (202 accepted; a refusal's status).
    public var relayStatus: Int?
    /// `--relay`: true when the relay had already accepted this submit (nothing new queued).
    public var relayDuplicate: Bool?
    /// Why this device was not sent to, which is no failure: its push state at the relay (`unregistered`, `none`),
    /// or `no-push-address` for the sender's own device without one.
    public var skipped: String?

    enum CodingKeys: String, CodingKey {
        case line, device, ok, status, reason, timestamp, attempts, local, error
        case deviceToken = "device_token"
        case apnsID = "apns_id"
        case messageID = "message_id"
        case errorMessage = "error_message"
        case relayPushID = "relay_push_id"
        case relayStatus = "relay_status"
        case relayDuplicate = "relay_duplicate"
        case skipped
    }

    public init(line: Int, result: APNsResult, messageID: MessageID?, device: String? = nil) {
        self.line = line
        self.device = device
        self.ok = result.isSuccess
        self.deviceToken = result.deviceToken
        self.apnsID = result.apnsID
        self.status = result.status
        self.reason = result.reason?.rawValue
        self.timestamp = result.timestamp
        self.attempts = result.attempts
        self.local = result.localOutcome?.code
        self.messageID = messageID?.hex
    }

    /// A failure; `messageID` when the message was sealed (a relay submit that failed, whose outcome may be unknown).
    public init(line: Int, error: SenderError, device: String? = nil, messageID: MessageID? = nil) {
        self.line = line
        self.device = device
        self.ok = false
        self.error = error.code.rawValue
        self.errorMessage = error.message
        self.messageID = messageID?.hex
    }

    /// A push the relay accepted (`--relay`).
    public init(line: Int, relayPushID: String, relayStatus: Int, duplicate: Bool, messageID: MessageID, device: String)
    {
        self.line = line
        self.device = device
        self.ok = true
        self.apnsID = relayPushID
        self.relayPushID = relayPushID
        self.relayStatus = relayStatus
        self.relayDuplicate = duplicate
        self.messageID = messageID.hex
    }

    /// A device not sent to because the relay cannot deliver to it (`--relay`); not a failure.
    public init(line: Int, skipped reason: String, messageID: MessageID, device: String) {
        self.line = line
        self.device = device
        self.ok = false
        self.skipped = reason
        self.messageID = messageID.hex
    }

    /// The error this result stands for, if it is not a success (used for the exit status). A skipped device is
    /// not a failure.
    public var failure: SenderError? {
        if self.ok || self.skipped != nil { return nil }
        if let error { return SenderError(Self.code(named: error), self.errorMessage ?? error) }
        if self.status != nil { return SenderError(.rejected, "APNs answered \(self.status!) \(self.reason ?? "")") }
        if self.local == APNsLocalOutcome.untrustedCertificate("").code {
            return SenderError(
                .untrustedCertificate,
                "APNs' TLS certificate does not verify against the trusted CA: nothing was sent. Give --apns-ca the PEM "
                    + "CA certificate that signed it (a local gateway's is ca.pem in its --tls-dir), or fix --apns-url"
            )
        }
        return SenderError(.deliveryFailed, "not delivered: \(self.local ?? "unknown")")
    }

    static func code(named name: String) -> SenderError.Code {
        SenderError.Code.all.first { $0.rawValue == name } ?? .badRequest
    }

    /// One JSON line, keys sorted.
    public func jsonLine() -> String {
        JSONLine.encode(self)
    }
}
