public import E2EECore
import Foundation

/// The JSON line `e2ee-send --deliver` and `batch --deliver` print per push.
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

    enum CodingKeys: String, CodingKey {
        case line, device, ok, status, reason, timestamp, attempts, local, error
        case deviceToken = "device_token"
        case apnsID = "apns_id"
        case messageID = "message_id"
        case errorMessage = "error_message"
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

    public init(line: Int, error: SenderError, device: String? = nil) {
        self.line = line
        self.device = device
        self.ok = false
        self.error = error.code.rawValue
        self.errorMessage = error.message
    }

    /// The error this result stands for, if it is not a success (used for the exit status).
    public var failure: SenderError? {
        if self.ok { return nil }
        if let error { return SenderError(Self.code(named: error), self.errorMessage ?? error) }
        if self.status != nil { return SenderError(.rejected, "APNs answered \(self.status!) \(self.reason ?? "")") }
        return SenderError(.deliveryFailed, "not delivered: \(self.local ?? "unknown")")
    }

    static func code(named name: String) -> SenderError.Code {
        SenderError.Code.all.first { $0.rawValue == name } ?? .badRequest
    }

    /// One JSON line, keys sorted.
    public func jsonLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try! encoder.encode(self), as: UTF8.self)
    }
}
