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

    /// The largest input line read: a request line holds a ≤ 4 KB body JSON-escaped plus headers.
    public static let maximumLineLength = 64 * 1024

    /// What one input line is, by one explicit rule (README.md, "What `e2ee-filter run` reads").
    enum LineKind: Sendable, Hashable {
        /// A gateway spool record: a JSON object without a top-level `"e2ee"` key that has `seq` and
        /// `received_at_ms` (integers), `apns_id` and `device_token` (strings), `headers` (an object of strings),
        /// and `body` or `body_base64` (a string; every one of the two that is present).
        case spoolRecord
        /// A request line as `e2ee-send` prints it: a JSON object without a top-level `"e2ee"` key that has `body`
        /// and `device_token` (strings) and `headers` (an object of strings).
        case requestLine
        /// Everything else: the line is the APNs body itself, and docs/PROTOCOL.md §4 decides it.
        case bareBody
    }

    /// Parses one input line: a gateway spool record, a request line as `e2ee-send` prints it, or a bare APNs body
    /// (see ``LineKind`` for the rule that tells them apart).
    ///
    /// A line that is neither a spool record nor a request line is a bare body, whatever it holds (`{}`, `null`,
    /// non-JSON, invalid UTF-8, too long): opening applies docs/PROTOCOL.md §4 to it exactly as to any APNs body
    /// (`APNsAlertTransport.envelope(fromBody:)`), so it is decided `too-large`, `malformed-envelope` or
    /// `foreign-payload`. Only a spool record whose `body_base64` is not base64 has no body (`malformed-input`).
    ///
    /// - Parameter defaultSeq: the sequence number when the line carries none (its 1-based line number); only a
    ///   spool record carries its own.
    public static func parse(line: [UInt8], defaultSeq: Int64) -> PayloadInput {
        guard let shape = LineShape.decode(line) else {
            return PayloadInput(seq: defaultSeq, apnsID: nil, body: line)
        }
        switch shape.kind {
        case .spoolRecord:
            let seq = shape.seq ?? defaultSeq
            var input: PayloadInput
            if let body = shape.body {
                input = PayloadInput(seq: seq, apnsID: shape.apnsID, body: Array(body.utf8))
            } else if let base64 = shape.bodyBase64, let data = Data(base64Encoded: base64) {
                input = PayloadInput(seq: seq, apnsID: shape.apnsID, body: Array(data))
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

    /// Whether this input is for the device with `token` (hex, any case): true for a bare body, which names no
    /// device, and for a record or request line whose `device_token` is `token`.
    public func isAddressed(to token: String) -> Bool {
        guard let own = self.deviceToken else { return true }
        return own.lowercased() == token.lowercased()
    }

    /// The kind of `line` (see ``LineKind``).
    static func kind(of line: [UInt8]) -> LineKind {
        LineShape.decode(line)?.kind ?? .bareBody
    }

    /// Reads back a payload kept while locked (``FilterEngine/pendingText(_:)``): its own format, never an input
    /// line, so a kept payload is decided exactly as it would have been without the lock.
    static func parsePending(_ text: String, seq: Int64) -> PayloadInput {
        guard let pending = try? JSONDecoder().decode(PendingShape.self, from: Data(text.utf8)),
            let base64 = pending.bodyBase64, let data = Data(base64Encoded: base64)
        else {
            return PayloadInput(seq: seq, apnsID: nil, malformed: "kept while locked as not understood")
        }
        return PayloadInput(seq: seq, apnsID: pending.apnsID, body: Array(data))
    }
}

private struct PendingShape: Decodable {
    var apnsID: String?
    var bodyBase64: String?
    enum CodingKeys: String, CodingKey {
        case apnsID = "apns_id"
        case bodyBase64 = "body_base64"
    }
}

/// The keys that tell a request line or a spool record from a bare body, each nil when absent or of another type.
private struct LineShape: Decodable {
    var seq: Int64?
    var receivedAtMs: Int64?
    var apnsID: String?
    var deviceToken: String?
    var headers: [String: String]?
    var body: String?
    var bodyBase64: String?
    var hasEnvelopeKey = false
    /// `body` or `body_base64` is present with a type other than string.
    var badBodyType = false

    enum CodingKeys: String, CodingKey {
        // `e2ee` is the APNs body's envelope key (`APNsAlertTransport.payloadKey`): a line with it is a bare body.
        case seq, headers, body, e2ee
        case receivedAtMs = "received_at_ms"
        case apnsID = "apns_id"
        case deviceToken = "device_token"
        case bodyBase64 = "body_base64"
    }

    /// The shape of a line that is valid UTF-8 JSON object text, or nil (then it is a bare body).
    static func decode(_ line: [UInt8]) -> LineShape? {
        // Only an object can be a request line or a spool record; anything else is a bare body without parsing.
        guard let first = line.first(where: { !Self.isJSONWhitespace($0) }), first == UInt8(ascii: "{"),
            line.count <= PayloadInput.maximumLineLength, String(validating: line, as: UTF8.self) != nil
        else { return nil }
        return try? JSONDecoder().decode(LineShape.self, from: Data(line))
    }

    private static func isJSONWhitespace(_ c: UInt8) -> Bool {
        c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.hasEnvelopeKey = c.contains(.e2ee)
        if self.hasEnvelopeKey { return }
        self.seq = try? c.decodeIfPresent(Int64.self, forKey: .seq)
        self.receivedAtMs = try? c.decodeIfPresent(Int64.self, forKey: .receivedAtMs)
        self.apnsID = try? c.decodeIfPresent(String.self, forKey: .apnsID)
        self.deviceToken = try? c.decodeIfPresent(String.self, forKey: .deviceToken)
        self.headers = try? c.decodeIfPresent([String: String].self, forKey: .headers)
        self.body = try? c.decodeIfPresent(String.self, forKey: .body)
        self.bodyBase64 = try? c.decodeIfPresent(String.self, forKey: .bodyBase64)
        self.badBodyType =
            (c.contains(.body) && self.body == nil) || (c.contains(.bodyBase64) && self.bodyBase64 == nil)
    }

    var kind: PayloadInput.LineKind {
        guard !self.hasEnvelopeKey, !self.badBodyType, self.deviceToken != nil, self.headers != nil else {
            return .bareBody
        }
        if self.seq != nil, self.receivedAtMs != nil, self.apnsID != nil, self.body != nil || self.bodyBase64 != nil {
            return .spoolRecord
        }
        return self.body != nil ? .requestLine : .bareBody
    }
}
