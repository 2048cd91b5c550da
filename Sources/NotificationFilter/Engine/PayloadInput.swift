public import PushTransport

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One input payload: its sequence number, its apns-id, and the APNs body bytes, or why it could not be read.
public struct PayloadInput: Sendable, Hashable {
    public var seq: Int64
    public var apnsID: String?
    /// The APNs body bytes, or nil when the line itself was not understood (`malformedReason` says why).
    public var body: [UInt8]?
    public var malformedReason: String?
    /// The `device_token` of a spool record or request line (nil for a bare body): which device the push was
    /// addressed to.
    public var deviceToken: String?

    public init(seq: Int64, apnsID: String?, body: [UInt8]) {
        self.seq = seq
        self.apnsID = apnsID
        self.body = body
    }

    init(seq: Int64, apnsID: String?, malformed: String) {
        self.seq = seq
        self.apnsID = apnsID
        self.malformedReason = malformed
    }

    /// The largest input line read: a request line holds a ≤ 4 KB body JSON-escaped plus headers
    /// (``PushLine/maximumLineLength``).
    public static let maximumLineLength = PushLine.maximumLineLength

    /// What one input line is, by one explicit rule (README.md, "What `e2ee-filter run` reads"): ``PushLine/Kind``.
    typealias LineKind = PushLine.Kind

    /// Parses one input line: a gateway spool record, a request line as `e2ee-send` prints it, or a bare APNs body
    /// (see ``PushLine/read(_:)`` for the rule that tells them apart).
    ///
    /// A line that is neither a spool record nor a request line is a bare body, whatever it holds (`{}`, `null`,
    /// non-JSON, invalid UTF-8, too long): opening applies docs/PROTOCOL.md §4 to it exactly as to any APNs body
    /// (the engine's push transport: `APNsAlertTransport.envelope(fromBody:)` for APNs), so it is decided `too-large`, `malformed-envelope` or
    /// `foreign-payload`. Only a spool record whose `body_base64` is not base64 has no body (`malformed-input`).
    ///
    /// - Parameter defaultSeq: the sequence number when the line carries none (its 1-based line number); only a
    ///   spool record carries its own.
    public static func parse(line: [UInt8], defaultSeq: Int64) -> PayloadInput {
        let (kind, read) = PushLine.read(line)
        guard let shape = read else {
            return PayloadInput(seq: defaultSeq, apnsID: nil, body: line)
        }
        switch kind {
        case .spoolRecord:
            let seq = shape.seq ?? defaultSeq
            var input: PayloadInput
            if let body = shape.bodyBytes {
                input = PayloadInput(seq: seq, apnsID: shape.apnsID, body: body)
            } else {
                input = PayloadInput(seq: seq, apnsID: shape.apnsID, malformed: "body_base64 is not base64")
            }
            input.deviceToken = shape.deviceToken
            return input
        case .requestLine:
            var input = PayloadInput(
                seq: defaultSeq,
                apnsID: shape.headers?["apns-id"],
                body: Array((shape.body ?? "").utf8)
            )
            input.deviceToken = shape.deviceToken
            return input
        case .bareBody:
            return PayloadInput(seq: defaultSeq, apnsID: nil, body: line)
        }
    }

    /// Whether this input is for the device with `token`: true for a bare body, which names no device, and for a
    /// record or request line whose `device_token` names the same device by `transport` (APNs: hex, any case).
    public func isAddressed(
        to token: String,
        transport: any PushTransport.Type = APNsAlertTransport.self
    ) -> Bool {
        guard let own = self.deviceToken else { return true }
        return transport.isSameDevice(own, token)
    }

    /// The kind of `line` (see ``PushLine/kind(of:)``).
    static func kind(of line: [UInt8]) -> LineKind {
        PushLine.kind(of: line)
    }

    /// The text a payload is kept as while its account is locked: a ``PushLine`` with `apns_id` (when known),
    /// `body_base64` and `seq`, or `seq` alone for an input without a body. Its own format, never an input line
    /// (``parsePending(_:seq:)`` reads it back), so a kept payload is decided exactly as it would have been
    /// without the lock.
    static func pendingText(_ input: PayloadInput) -> String {
        guard let body = input.body else { return PushLine(seq: input.seq).jsonLine() }
        return PushLine(seq: input.seq, apnsID: input.apnsID, bodyBase64: Data(body).base64EncodedString()).jsonLine()
    }

    /// Reads back a payload kept while locked (``pendingText(_:)``): its `body_base64` and `apns_id`.
    static func parsePending(_ text: String, seq: Int64) -> PayloadInput {
        guard let pending = try? JSONDecoder().decode(PushLine.self, from: Data(text.utf8)),
            let base64 = pending.bodyBase64, let data = Data(base64Encoded: base64)
        else {
            return PayloadInput(seq: seq, apnsID: nil, malformed: "kept while locked as not understood")
        }
        return PayloadInput(seq: seq, apnsID: pending.apnsID, body: Array(data))
    }
}
