import Foundation
public import PushTransport

/// One APNs request, exactly as it goes on the wire: the device token, the `apns-*` headers and the body bytes.
///
/// This is also the JSON line that `e2ee-send` prints and that `e2ee-filter run` reads:
///
/// ```json
/// {"device_token":"<hex>","headers":{"apns-expiration":"0","apns-id":"<UUID>","apns-priority":"10",
///  "apns-push-type":"alert","apns-topic":"com.example.app"},"body":"{\"aps\":{...},\"e2ee\":\"...\"}"}
/// ```
///
/// `body` is the exact body text (our bodies are ASCII JSON), so the line carries the bytes byte for byte. The line
/// is a ``PushLine``, the one type of every push written as a JSON line (the gateway's spool records too).
/// The `authorization` header is never part of this value: the provider adds it when it sends.
public struct APNsRequest: Sendable, Hashable, Codable {
    /// The device token as lowercase hex (APNs tokens are hex; 32 bytes in practice, not assumed).
    public var deviceToken: String
    /// The `apns-*` request headers, lowercase names. Every kind of message carries the same set and values
    /// except `apns-id`.
    public var headers: [String: String]
    /// The body bytes as text (UTF-8 JSON).
    public var body: String

    public init(deviceToken: String, headers: [String: String], body: String) {
        self.deviceToken = deviceToken
        self.headers = headers
        self.body = body
    }

    /// The `apns-id` header, if set.
    public var apnsID: String? { self.headers["apns-id"] }

    /// The body's UTF-8 bytes as sent.
    public var bodyBytes: [UInt8] { Array(self.body.utf8) }

    /// The request as a ``PushLine`` (what it is printed and read as), naming `device` when given.
    public func pushLine(device: String? = nil) -> PushLine {
        PushLine(deviceToken: self.deviceToken, headers: self.headers, body: self.body, device: device)
    }

    /// Creates a request from a line that has `body`, `device_token` and `headers`; every other key is ignored.
    ///
    /// - Throws: `DecodingError.keyNotFound` naming the first of them missing.
    public init(_ line: PushLine) throws {
        func required<T>(_ value: T?, _ key: PushLine.CodingKeys) throws -> T {
            try PushLine.required(value, key, in: "a request line")
        }
        self.init(
            deviceToken: try required(line.deviceToken, .deviceToken),
            headers: try required(line.headers, .headers),
            body: try required(line.body, .body)
        )
    }

    public init(from decoder: any Decoder) throws {
        try self.init(PushLine(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try self.pushLine().encode(to: encoder)
    }

    /// Encodes the request as one JSON line (no trailing newline), keys sorted so the line is deterministic
    /// (``PushLine/jsonLine()``).
    public func jsonLine() -> String {
        self.pushLine().jsonLine()
    }
}

extension APNsRequest {
    /// The request line with the recipient device named (`"device":"<device id>"`): what `e2ee-send` prints for
    /// each device of a fan-out. The device id is for the caller's records, never sent: `e2ee-send deliver` and
    /// `e2ee-filter run` ignore it.
    public func jsonLine(device: String?) -> String {
        self.pushLine(device: device).jsonLine()
    }
}
