import Foundation

/// One accepted push, as the gateway hands it to a ``DeliverySink``.
///
/// Serialised as ONE JSON line with sorted keys, the same key names the sender's request lines use:
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
        self.seq = seq
        self.apnsID = apnsID
        self.deviceToken = deviceToken
        self.headers = headers
        if let text = String(validating: bodyBytes, as: UTF8.self) {
            self.body = text
            self.bodyBase64 = nil
        } else {
            self.body = nil
            self.bodyBase64 = Data(bodyBytes).base64EncodedString()
        }
        self.receivedAtMs = receivedAtMs
    }

    /// The body bytes, from `body` or `bodyBase64`.
    public var bodyBytes: [UInt8] {
        if let body { return Array(body.utf8) }
        if let bodyBase64, let data = Data(base64Encoded: bodyBase64) { return Array(data) }
        return []
    }

    enum CodingKeys: String, CodingKey {
        case seq
        case apnsID = "apns_id"
        case deviceToken = "device_token"
        case headers
        case body
        case bodyBase64 = "body_base64"
        case receivedAtMs = "received_at_ms"
    }

    /// The record as one JSON line with sorted keys, without the trailing newline.
    ///
    /// Written by hand in one pass: the bytes are exactly what `JSONEncoder` with `[.sortedKeys,
    /// .withoutEscapingSlashes]` makes of the record (a test holds the two equal), at a fraction of its cost: this
    /// runs once per accepted push.
    ///
    /// - Returns: The JSON text; it holds no newline characters.
    public func jsonLine() -> String {
        var out: [UInt8] = []
        out.reserveCapacity(160 + (self.body?.utf8.count ?? 0) + (self.bodyBase64?.utf8.count ?? 0))
        out.append(contentsOf: #"{"apns_id":"#.utf8)
        JSONText.appendString(self.apnsID, to: &out)
        if let body = self.body {
            out.append(contentsOf: #","body":"#.utf8)
            JSONText.appendString(body, to: &out)
        }
        if let bodyBase64 = self.bodyBase64 {
            out.append(contentsOf: #","body_base64":"#.utf8)
            JSONText.appendString(bodyBase64, to: &out)
        }
        out.append(contentsOf: #","device_token":"#.utf8)
        JSONText.appendString(self.deviceToken, to: &out)
        out.append(contentsOf: #","headers":{"#.utf8)
        for (index, name) in JSONText.sortedKeys(self.headers.keys).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONText.appendString(name, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONText.appendString(self.headers[name]!, to: &out)
        }
        out.append(contentsOf: #"},"received_at_ms":"#.utf8)
        out.append(contentsOf: String(self.receivedAtMs).utf8)
        out.append(contentsOf: #","seq":"#.utf8)
        out.append(contentsOf: String(self.seq).utf8)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
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
