#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A push as one JSON line: the one type behind every such line the project writes or reads.
///
/// - the request line `e2ee-send` prints and `e2ee-send deliver` reads (`Sender.APNsRequest`):
///   `{"body":"…","device_token":"<hex>","headers":{…}}`, with `"device":"<device id>"` for a fan-out;
/// - the gateway's spool record (`APNsGateway.DeliveryRecord`):
///   `{"apns_id":"…","body":"…","device_token":"<hex>","headers":{…},"received_at_ms":…,"seq":…}`, with
///   `body_base64` instead of `body` when the body is not valid UTF-8;
/// - what `e2ee-filter run` reads: a spool record, a request line or a bare APNs body (``kind(of:)``);
/// - a payload the filter keeps while its account is locked: `{"apns_id":"…","body_base64":"…","seq":…}`.
///
/// Every key is optional here; each of those types says which ones it requires. Encoding (``jsonLine()`` and
/// `Encodable`) writes the present keys only, sorted by their UTF-8 bytes, slashes unescaped: exactly what
/// `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` writes, one line without a newline.
public struct PushLine: Codable, Sendable, Hashable {
    /// The position in the gateway's delivery stream (spool records; the seq of a kept payload).
    public var seq: Int64?
    /// The notification's `apns-id` (spool records and kept payloads; a request line has it in `headers`).
    public var apnsID: String?
    /// The device token as hex.
    public var deviceToken: String?
    /// The `apns-*` request headers, lowercase names; never `authorization`.
    public var headers: [String: String]?
    /// The body text, exactly, when the body is valid UTF-8.
    public var body: String?
    /// The body as standard base64 (when it is not valid UTF-8, or in a kept payload).
    public var bodyBase64: String?
    /// When the gateway accepted the push, in milliseconds since 1970.
    public var receivedAtMs: Int64?
    /// The recipient device's id, for the reader's records only: never sent, never read back by the tools.
    public var device: String?

    public init(
        seq: Int64? = nil,
        apnsID: String? = nil,
        deviceToken: String? = nil,
        headers: [String: String]? = nil,
        body: String? = nil,
        bodyBase64: String? = nil,
        receivedAtMs: Int64? = nil,
        device: String? = nil
    ) {
        self.seq = seq
        self.apnsID = apnsID
        self.deviceToken = deviceToken
        self.headers = headers
        self.body = body
        self.bodyBase64 = bodyBase64
        self.receivedAtMs = receivedAtMs
        self.device = device
    }

    /// Creates a line from the body bytes: `body` when they are valid UTF-8, otherwise `body_base64`.
    public init(
        seq: Int64? = nil,
        apnsID: String? = nil,
        deviceToken: String? = nil,
        headers: [String: String]? = nil,
        bodyBytes: [UInt8],
        receivedAtMs: Int64? = nil,
        device: String? = nil
    ) {
        self.init(
            seq: seq,
            apnsID: apnsID,
            deviceToken: deviceToken,
            headers: headers,
            receivedAtMs: receivedAtMs,
            device: device
        )
        if let text = String(validating: bodyBytes, as: UTF8.self) {
            self.body = text
        } else {
            self.bodyBase64 = Data(bodyBytes).base64EncodedString()
        }
    }

    /// The body bytes: `body`'s UTF-8 when present, else `body_base64` decoded; nil when neither is present or
    /// `body_base64` is not base64.
    public var bodyBytes: [UInt8]? {
        if let body { return Array(body.utf8) }
        if let bodyBase64, let data = Data(base64Encoded: bodyBase64) { return Array(data) }
        return nil
    }

    /// `value`, which a `shape` (`"a spool record"`, `"a request line"`) must have under `key`.
    ///
    /// - Throws: `DecodingError.keyNotFound` naming `key` when `value` is nil.
    public static func required<T>(_ value: T?, _ key: CodingKeys, in shape: String) throws -> T {
        guard let value else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(codingPath: [], debugDescription: "\(shape) has \"\(key.stringValue)\"")
            )
        }
        return value
    }

    public enum CodingKeys: String, CodingKey, Sendable {
        case seq
        case apnsID = "apns_id"
        case deviceToken = "device_token"
        case headers
        case body
        case bodyBase64 = "body_base64"
        case receivedAtMs = "received_at_ms"
        case device
    }

    /// The line as JSON text with sorted keys, without the trailing newline.
    ///
    /// Written by hand in one pass (it runs once per push the gateway accepts): the bytes are exactly what
    /// `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` makes of the line (tests hold the two equal).
    ///
    /// - Returns: The JSON text; it holds no newline characters.
    public func jsonLine() -> String {
        var out: [UInt8] = []
        out.reserveCapacity(200 + (self.body?.utf8.count ?? 0) + (self.bodyBase64?.utf8.count ?? 0))
        out.append(UInt8(ascii: "{"))
        // The keys in UTF-8 byte order: apns_id, body, body_base64, device, device_token, headers,
        // received_at_ms, seq.
        var members = JSONMembers()
        if let apnsID = self.apnsID { members.string("apns_id", apnsID, &out) }
        if let body = self.body { members.string("body", body, &out) }
        if let bodyBase64 = self.bodyBase64 { members.string("body_base64", bodyBase64, &out) }
        if let device = self.device { members.string("device", device, &out) }
        if let deviceToken = self.deviceToken { members.string("device_token", deviceToken, &out) }
        if let headers = self.headers {
            members.key("headers", &out)
            out.append(UInt8(ascii: "{"))
            for (index, name) in JSONText.sortedKeys(headers.keys).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.appendString(name, to: &out)
                out.append(UInt8(ascii: ":"))
                JSONText.appendString(headers[name]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        if let receivedAtMs = self.receivedAtMs { members.literal("received_at_ms", String(receivedAtMs), &out) }
        if let seq = self.seq { members.literal("seq", String(seq), &out) }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}

// MARK: - What a line is

extension PushLine {
    /// What one line read as a push is, by one rule (README.md, "What `e2ee-filter run` reads").
    public enum Kind: Sendable, Hashable {
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

    /// The longest line that can be a spool record or a request line: a ≤ 4 KB body JSON-escaped plus headers.
    public static let maximumLineLength = 64 * 1024

    /// Reads `line` leniently and tells what it is (see ``Kind``).
    ///
    /// Only a line of at most ``maximumLineLength`` bytes of valid UTF-8 whose first non-whitespace byte is `{`
    /// is parsed at all; every key is then read on its own and is nil when absent or of another type (`device`
    /// plays no part in the rule). Any other line, and any line that is not a JSON object, is a bare body.
    ///
    /// The lines the tools write (request lines, spool records, kept payloads) take ``PushLineScanner``, one pass
    /// over the bytes; any line it declines is read by `JSONDecoder` (``readDecoding(_:)``), with the same result.
    ///
    /// - Parameter line: One input line, without its newline.
    /// - Returns: The kind, and the keys read when the line is a spool record or a request line (nil for a bare
    ///   body).
    public static func read(_ line: [UInt8]) -> (kind: Kind, line: PushLine?) {
        guard Self.mayBeObject(line) else { return (.bareBody, nil) }
        // The scanner takes no `e2ee` key and no key of another type (so no `body` of another type): the rule
        // applies to its keys as they are.
        if let scanned = PushLineScanner.scan(line) {
            let kind = Self.kind(ofKeys: scanned, bodyOfOtherType: false)
            return (kind, kind == .bareBody ? nil : scanned)
        }
        return Self.readDecoding(line)
    }

    /// ``read(_:)`` with `JSONDecoder` alone: what the scanner's result must equal (tests hold the two equal).
    static func readDecoding(_ line: [UInt8]) -> (kind: Kind, line: PushLine?) {
        guard Self.mayBeObject(line), String(validating: line, as: UTF8.self) != nil,
            let lenient = try? JSONDecoder().decode(LenientRead.self, from: Data(line))
        else { return (.bareBody, nil) }
        let kind = lenient.kind
        return (kind, kind == .bareBody ? nil : lenient.line)
    }

    /// The kind of `line` (see ``Kind`` and ``read(_:)``).
    public static func kind(of line: [UInt8]) -> Kind {
        Self.read(line).kind
    }

    /// The rule of ``Kind`` over the keys read from a line without an `e2ee` key, each nil when absent or of another
    /// type; `bodyOfOtherType` when `body` or `body_base64` is present with a type other than string.
    fileprivate static func kind(ofKeys l: PushLine, bodyOfOtherType: Bool) -> Kind {
        guard !bodyOfOtherType, l.deviceToken != nil, l.headers != nil else { return .bareBody }
        if l.seq != nil, l.receivedAtMs != nil, l.apnsID != nil, l.body != nil || l.bodyBase64 != nil {
            return .spoolRecord
        }
        return l.body != nil ? .requestLine : .bareBody
    }

    /// Only an object can be a request line or a spool record; anything else is a bare body without parsing.
    private static func mayBeObject(_ line: [UInt8]) -> Bool {
        line.first(where: { !Self.isJSONWhitespace($0) }) == UInt8(ascii: "{") && line.count <= Self.maximumLineLength
    }

    private static func isJSONWhitespace(_ c: UInt8) -> Bool {
        c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D
    }
}

/// The lenient reading behind ``PushLine/read(_:)``: each key on its own, plus what the rule needs beyond them.
private struct LenientRead: Decodable {
    var line = PushLine()
    var kind = PushLine.Kind.bareBody

    /// `e2ee` is the APNs body's envelope key (`APNsAlertTransport.payloadKey`): a line with it is a bare body.
    private enum EnvelopeKey: String, CodingKey {
        case e2ee
    }

    init(from decoder: any Decoder) throws {
        if try decoder.container(keyedBy: EnvelopeKey.self).contains(.e2ee) { return }
        let c = try decoder.container(keyedBy: PushLine.CodingKeys.self)
        self.line.seq = try? c.decodeIfPresent(Int64.self, forKey: .seq)
        self.line.receivedAtMs = try? c.decodeIfPresent(Int64.self, forKey: .receivedAtMs)
        self.line.apnsID = try? c.decodeIfPresent(String.self, forKey: .apnsID)
        self.line.deviceToken = try? c.decodeIfPresent(String.self, forKey: .deviceToken)
        self.line.headers = try? c.decodeIfPresent([String: String].self, forKey: .headers)
        self.line.body = try? c.decodeIfPresent(String.self, forKey: .body)
        self.line.bodyBase64 = try? c.decodeIfPresent(String.self, forKey: .bodyBase64)
        self.line.device = try? c.decodeIfPresent(String.self, forKey: .device)
        // `body` or `body_base64` present with a type other than string.
        let badBodyType =
            (c.contains(.body) && self.line.body == nil) || (c.contains(.bodyBase64) && self.line.bodyBase64 == nil)
        self.kind = PushLine.kind(ofKeys: self.line, bodyOfOtherType: badBodyType)
    }
}
