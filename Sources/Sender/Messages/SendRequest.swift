public import E2EECore
import Foundation

/// One request to send, as `e2ee-send batch` reads it: a JSON object per line.
///
/// ```json
/// {"kind":"call","to":"bob","call_id":"<UUID>","video":true,"ring_timeout":30}
/// {"kind":"cancel","to":"bob","call_id":"<UUID>","reason":"remoteEnded"}
/// {"kind":"text","to":"bob","thread":"t1","title":"Hi","body":"Lunch?"}
/// {"kind":"receipt","to":"bob","message_ids":["<32 hex>"]}
/// ```
/// Every key, field by field (README "Batch requests" repeats this table):
/// - `kind` (required): `call` (or `call-invite`), `cancel` (or `call-cancel`), `text`, `receipt`.
/// - `to` (required): a user id found in `--contacts`, or a path to a card file ending in `.json`.
/// - `device_token`: overrides the card's APNs address's device token (hex). `topic`: overrides the card's APNs address's topic
///   (and `--topic`/`$E2EE_TOPIC`).
/// - `message_id`: 32 hex digits; random by default. `sent_at_ms`: for tests and demos, the signed send time in
///   milliseconds since the epoch (default: now).
/// - call: `call_id` (UUID; a new one by default, as `e2ee-send call` does), `video` (bool, default false),
///   `ring_timeout` (1-3600 s, default 30), `handle` (default: the sender's user id), `display_name` (default: the
///   sender's), `participants` (array of strings), `headers` (object of strings).
/// - cancel: `call_id` (required), `reason`: `remoteEnded` (default), `answeredElsewhere`, `declinedElsewhere`.
/// - text: `body` (required), `title`, `thread`.
/// - receipt: `message_ids` (required: 1-255 ids of 32 hex digits; how many fit depends on the sender's user id,
///   see docs/PROTOCOL.md §6).
///
/// Any other key is an error that names it: a misspelt option must not silently become a default.
public struct SendRequest: Sendable, Codable, Hashable {
    public var kind: String
    public var to: String
    public var deviceToken: String?
    /// The app's bundle id for this push; default: `--topic`, then the card's APNs address's topic.
    public var topic: String?
    public var messageID: String?
    public var callID: String?
    public var video: Bool?
    public var ringTimeout: Int?
    public var handle: String?
    public var displayName: String?
    public var participants: [String]?
    public var headers: [String: String]?
    public var reason: String?
    public var thread: String?
    public var title: String?
    public var body: String?
    public var messageIDs: [String]?
    /// For tests and demos: the signed send time, in milliseconds since the epoch; a receiver judges staleness
    /// from it. `nil` signs the sender's clock.
    public var sentAtMs: UInt64?

    enum CodingKeys: String, CodingKey {
        case kind, to, topic, video, handle, participants, headers, reason, thread, title, body
        case deviceToken = "device_token"
        case messageID = "message_id"
        case callID = "call_id"
        case ringTimeout = "ring_timeout"
        case displayName = "display_name"
        case messageIDs = "message_ids"
        case sentAtMs = "sent_at_ms"
    }

    public init(kind: String, to: String) {
        self.kind = kind
        self.to = to
    }

    /// Decodes a request, refusing any key it does not know (naming it, and the key meant when it is a wire name
    /// or a common misspelling).
    public init(from decoder: any Decoder) throws {
        let all = try decoder.container(keyedBy: AnyCodingKey.self)
        for key in all.allKeys where CodingKeys(stringValue: key.stringValue) == nil {
            var message = "unknown key \"\(key.stringValue)\""
            if let meant = Self.meantKeys[key.stringValue] { message += " (did you mean \"\(meant)\"?)" }
            throw SenderError(.badRequest, message + "; the keys are listed in README \"Batch requests\"")
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.kind = try container.decode(String.self, forKey: .kind)
        self.to = try container.decode(String.self, forKey: .to)
        self.deviceToken = try container.decodeIfPresent(String.self, forKey: .deviceToken)
        self.topic = try container.decodeIfPresent(String.self, forKey: .topic)
        self.messageID = try container.decodeIfPresent(String.self, forKey: .messageID)
        self.callID = try container.decodeIfPresent(String.self, forKey: .callID)
        self.video = try container.decodeIfPresent(Bool.self, forKey: .video)
        self.ringTimeout = try container.decodeIfPresent(Int.self, forKey: .ringTimeout)
        self.handle = try container.decodeIfPresent(String.self, forKey: .handle)
        self.displayName = try container.decodeIfPresent(String.self, forKey: .displayName)
        self.participants = try container.decodeIfPresent([String].self, forKey: .participants)
        self.headers = try container.decodeIfPresent([String: String].self, forKey: .headers)
        self.reason = try container.decodeIfPresent(String.self, forKey: .reason)
        self.thread = try container.decodeIfPresent(String.self, forKey: .thread)
        self.title = try container.decodeIfPresent(String.self, forKey: .title)
        self.body = try container.decodeIfPresent(String.self, forKey: .body)
        self.messageIDs = try container.decodeIfPresent([String].self, forKey: .messageIDs)
        self.sentAtMs = try container.decodeIfPresent(UInt64.self, forKey: .sentAtMs)
    }

    /// Keys people write for the ones this format uses: the inner message's wire names (docs/PROTOCOL.md §7.1) and
    /// the CLI's flag names.
    static let meantKeys: [String: String] = [
        "has_video": "video", "ring_timeout_s": "ring_timeout", "caller_handle": "handle",
        "thread_id": "thread", "group_participants": "participants", "custom_headers": "headers",
        "participant": "participants", "header": "headers", "for": "message_ids", "token": "device_token",
        "messageID": "message_id", "callID": "call_id", "deviceToken": "device_token", "sentAtMs": "sent_at_ms",
    ]

    /// Parses one JSON line. - Throws: `.badRequest` saying what is wrong.
    public static func parse(line: String) throws(SenderError) -> SendRequest {
        do {
            return try JSONDecoder().decode(SendRequest.self, from: Data(line.utf8))
        } catch let error as SenderError {
            throw error
        } catch {
            throw SenderError(
                .badRequest,
                "not a send request (a JSON object with \"kind\" and \"to\"): \(APNsRequest.describe(error))"
            )
        }
    }

    /// The message content this request asks for.
    ///
    /// - Parameter sender: the sender's identity (default handle and display name of calls).
    /// - Throws: `.badRequest` for a missing or invalid field.
    public func content(sender: Identity) throws(SenderError) -> MessageContent {
        switch self.kind {
        case "call", "call-invite":
            // A call without an id gets a new one, as `e2ee-send call` does.
            let callID = try self.callID == nil ? UUID() : Self.uuid(self.callID, "call_id")
            return .callInvite(
                CallInvite(
                    callID: callID,
                    callerHandle: self.handle ?? sender.userID,
                    displayName: self.displayName ?? sender.displayName,
                    hasVideo: self.video ?? false,
                    ringTimeoutSeconds: try Self.ringTimeout(self.ringTimeout ?? 30),
                    groupParticipants: self.participants ?? [],
                    customHeaders: self.headers ?? [:]
                )
            )
        case "cancel", "call-cancel":
            let names = CallCancelReason.allCases.map(\.description)
            guard
                let reason = CallCancelReason.allCases.first(where: { $0.description == (self.reason ?? "remoteEnded") }
                )
            else {
                throw SenderError(.badRequest, "reason must be one of \(names.joined(separator: ", "))")
            }
            return .callCancel(CallCancel(callID: try Self.uuid(self.callID, "call_id"), reason: reason))
        case "text":
            guard let body = self.body else { throw SenderError(.badRequest, "a text needs \"body\"") }
            return .text(TextMessage(threadID: self.thread ?? "", title: self.title ?? "", body: body))
        case "receipt":
            guard let ids = self.messageIDs, !ids.isEmpty else {
                throw SenderError(.badRequest, "a receipt needs \"message_ids\" (1-255 ids of 32 hex digits)")
            }
            var parsed: [MessageID] = []
            for id in ids { parsed.append(try Self.messageID(id)) }
            return .receipt(Receipt(messageIDs: parsed))
        default:
            throw SenderError(.badRequest, "unknown kind \"\(self.kind)\": use call, cancel, text or receipt")
        }
    }

    static func uuid(_ value: String?, _ field: String) throws(SenderError) -> UUID {
        guard let value, let uuid = UUID(uuidString: value) else {
            throw SenderError(.badRequest, "\(field) must be a UUID like 6F1C8A52-3B1E-4C7A-9D2E-5A4B3C2D1E0F")
        }
        return uuid
    }

    static func ringTimeout(_ value: Int) throws(SenderError) -> UInt16 {
        guard (1...3600).contains(value) else { throw SenderError(.badRequest, "ring_timeout must be 1-3600 seconds") }
        return UInt16(value)
    }

    /// Parses a 32-hex-digit message id.
    public static func messageID(_ hex: String) throws(SenderError) -> MessageID {
        guard let bytes = Hex.decode(hex), bytes.count == 16, let id = try? MessageID(bytes: bytes) else {
            throw SenderError(.badRequest, "a message id is 32 hex digits, got \"\(hex.prefix(40))\"")
        }
        return id
    }
}

// MARK: - Request lines to deliver as they are

extension APNsRequest {
    /// Parses one APNs request line, as `e2ee-send call|text|...` and `batch` print it without `--deliver`.
    ///
    /// The line is `{"body":"...","device_token":"<hex>","headers":{...}}`. Nothing is rebuilt or re-sealed: the
    /// body bytes and every header (including `apns-id`) are kept exactly, so `e2ee-send deliver` sends what a
    /// person inspected, byte for byte. Checks that only APNs can make (token format, header values) are left to
    /// the provider and to APNs.
    ///
    /// - Parameter line: one JSON object (surrounding whitespace is ignored).
    /// - Returns: the request, unchanged.
    /// - Throws: `.badRequest` when the line is not a JSON object with a string `body`, a string `device_token`
    ///   and an object `headers` of strings.
    public static func parse(requestLine line: String) throws(SenderError) -> APNsRequest {
        // The lines e2ee-send prints take the one-pass scanner; anything else gets the full decoder.
        if let request = Self.scanned(requestLine: line) { return request }
        do {
            return try JSONDecoder().decode(APNsRequest.self, from: Data(line.utf8))
        } catch {
            throw SenderError(
                .badRequest,
                "not an APNs request line ({\"body\":\"...\",\"device_token\":\"<hex>\",\"headers\":{...}}, "
                    + "as e2ee-send prints without --deliver): \(Self.describe(error))"
            )
        }
    }

    /// The fast path of ``parse(requestLine:)``: the request when ``PushLineScanner`` takes `line` and it has exactly
    /// `body`, `device_token` and `headers`, or nil (then the decoder reads the line, and words any error).
    static func scanned(requestLine line: String) -> APNsRequest? {
        guard let scanned = PushLineScanner.scan(line), let body = scanned.body,
            let deviceToken = scanned.deviceToken, let headers = scanned.headers,
            scanned == PushLine(deviceToken: deviceToken, headers: headers, body: body)
        else { return nil }
        return APNsRequest(deviceToken: deviceToken, headers: headers, body: body)
    }

    /// A short account of a decoding error that never repeats the line's content (it may hold an envelope).
    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _):
            return "missing \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "wrong type at \"\(path)\""
        default:
            return "not valid JSON"
        }
    }
}

/// A coding key for any name: lets a decoder list every key of an object.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
