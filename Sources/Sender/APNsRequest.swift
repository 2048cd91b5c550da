import Foundation

/// One APNs request, exactly as it goes on the wire: the device token, the `apns-*` headers and the body bytes.
///
/// This is also the JSON line that `e2ee-send` prints and that `e2ee-filter run` reads:
///
/// ```json
/// {"device_token":"<hex>","headers":{"apns-expiration":"0","apns-id":"<UUID>","apns-priority":"10",
///  "apns-push-type":"alert","apns-topic":"com.example.app"},"body":"{\"aps\":{...},\"e2ee\":\"...\"}"}
/// ```
///
/// `body` is the exact body text (our bodies are ASCII JSON), so the line carries the bytes byte for byte.
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

    enum CodingKeys: String, CodingKey {
        case deviceToken = "device_token"
        case headers
        case body
    }

    /// Encodes the request as one JSON line (no trailing newline), keys sorted so the line is deterministic.
    public func jsonLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a struct of strings cannot fail.
        let data = try! encoder.encode(self)
        return String(decoding: data, as: UTF8.self)
    }
}

extension APNsRequest {
    /// The request line with the recipient device named (`"device":"<device id>"`): what `e2ee-send` prints for
    /// each device of a fan-out. The device id is for the caller's records, never sent: `e2ee-send deliver` and
    /// `e2ee-filter run` ignore it.
    public func jsonLine(device: String?) -> String {
        guard let device else { return self.jsonLine() }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a struct of strings cannot fail.
        let data = try! encoder.encode(DeviceRequestLine(request: self, device: device))
        return String(decoding: data, as: UTF8.self)
    }
}

/// A request line with the device it is for.
private struct DeviceRequestLine: Encodable {
    let request: APNsRequest
    let device: String

    enum CodingKeys: String, CodingKey {
        case deviceToken = "device_token"
        case headers, body, device
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(self.request.body, forKey: .body)
        try c.encode(self.device, forKey: .device)
        try c.encode(self.request.deviceToken, forKey: .deviceToken)
        try c.encode(self.request.headers, forKey: .headers)
    }
}
