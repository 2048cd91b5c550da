import Foundation
public import PushTransport

/// One accepted push, as the gateway hands it to a ``DeliverySink``.
///
/// Serialised as ONE JSON line with sorted keys, a ``PushLine`` (the one type of the sender's request lines too):
///
/// ```json
/// {"apns_id":"<UUID>","body":"<exact body text>","device_token":"<hex>","headers":{"apns-expiration":"0",...},
///  "received_at_ms":1767225600000,"seq":1}
/// ```
///
/// `body` holds the body bytes exactly when they are valid UTF-8; otherwise `body` is absent and `body_base64`
/// carries them. `headers` holds every `apns-*` request header with lowercase names, never `authorization`.
public struct DeliveryRecord: Sendable, Codable, Hashable {
    /// The position in the delivery stream, 1-based, strictly increasing (continued across restarts of a spool).
    public var seq: Int
    /// The notification's `apns-id` (the request's, or the one the gateway generated and answered with).
    public var apnsID: String
    /// The device token as lowercase hex.
    public var deviceToken: String
    /// Every `apns-*` request header, lowercase names.
    public var headers: [String: String]
    /// The body text, exactly as received, when it is valid UTF-8.
    public var body: String?
    /// The body as standard base64, only when it is not valid UTF-8.
    public var bodyBase64: String?
    /// When the gateway accepted the push, in milliseconds since 1970 (the gateway's clock).
    public var receivedAtMs: Int64

    /// Creates a record from the body bytes, choosing `body` or `bodyBase64`.
    ///
    /// - Parameters:
    ///   - seq: The position in the delivery stream.
    ///   - apnsID: The notification id.
    ///   - deviceToken: The device token as lowercase hex.
    ///   - headers: The `apns-*` request headers.
    ///   - bodyBytes: The body exactly as received.
    ///   - receivedAtMs: The acceptance time in milliseconds since 1970.
    public init(
        seq: Int,
        apnsID: String,
        deviceToken: String,
        headers: [String: String],
        bodyBytes: [UInt8],
        receivedAtMs: Int64
    ) {
        let line = PushLine(bodyBytes: bodyBytes)
        self.seq = seq
        self.apnsID = apnsID
        self.deviceToken = deviceToken
        self.headers = headers
        self.body = line.body
        self.bodyBase64 = line.bodyBase64
        self.receivedAtMs = receivedAtMs
    }

    /// Creates a record from a line that has every key a spool record requires.
    ///
    /// - Parameter line: The line; its `device`, if any, is ignored.
    /// - Throws: `DecodingError.keyNotFound` naming the first key missing (`seq`, `apns_id`, `device_token`,
    ///   `headers`, `received_at_ms`).
    public init(_ line: PushLine) throws {
        func required<T>(_ value: T?, _ key: PushLine.CodingKeys) throws -> T {
            try PushLine.required(value, key, in: "a spool record")
        }
        self.seq = try Int(required(line.seq, .seq))
        self.apnsID = try required(line.apnsID, .apnsID)
        self.deviceToken = try required(line.deviceToken, .deviceToken)
        self.headers = try required(line.headers, .headers)
        self.body = line.body
        self.bodyBase64 = line.bodyBase64
        self.receivedAtMs = try required(line.receivedAtMs, .receivedAtMs)
    }

    /// The record as a ``PushLine`` (what it is written and read as).
    public var pushLine: PushLine {
        PushLine(
            seq: Int64(self.seq),
            apnsID: self.apnsID,
            deviceToken: self.deviceToken,
            headers: self.headers,
            body: self.body,
            bodyBase64: self.bodyBase64,
            receivedAtMs: self.receivedAtMs
        )
    }

    /// The body bytes, from `body` or `bodyBase64`.
    public var bodyBytes: [UInt8] {
        self.pushLine.bodyBytes ?? []
    }

    public init(from decoder: any Decoder) throws {
        try self.init(PushLine(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try self.pushLine.encode(to: encoder)
    }

    /// The record as one JSON line with sorted keys, without the trailing newline: ``PushLine/jsonLine()``, whose
    /// bytes are exactly what `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` makes of the record (a
    /// test holds the two equal), at a fraction of its cost: this runs once per accepted push.
    ///
    /// - Returns: The JSON text; it holds no newline characters.
    public func jsonLine() -> String {
        self.pushLine.jsonLine()
    }

    /// Parses one JSON line.
    ///
    /// - Parameter line: A line written by ``jsonLine()``.
    /// - Returns: The record.
    /// - Throws: `DecodingError` when the line is no record.
    public static func parse(jsonLine line: some StringProtocol) throws -> DeliveryRecord {
        try JSONDecoder().decode(DeliveryRecord.self, from: Data(line.utf8))
    }
}
