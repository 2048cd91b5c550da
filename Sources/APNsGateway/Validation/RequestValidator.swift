import PushTransport
/// The request rules of APNs that do not depend on the connection: path, method, headers, body and device state.
///
/// Each check returns the APNs rejection a real server gives; the order is path, method, duplicate headers,
/// device token format (``route(_:)``), then, after authentication, the `apns-*` headers (``headers(_:)``), the
/// body (``body(_:pushType:)``) and the device registry (``device(_:topic:bundleID:in:)``).
struct RequestValidator: Sendable {
    /// The accepted, normalised `apns-*` values of a request.
    struct ValidatedHeaders: Sendable {
        var pushType: PushType
        var topic: String
        var bundleID: String
    }

    let environment: APNsEnvironment
    let topics: Set<String>

    /// Checks path, method, duplicate headers and the device token; returns the token as lowercase hex.
    func route(_ request: GatewayRequest) -> Result<String, APNsRejection> {
        let prefix = "/3/device"
        guard let path = request.path, path == prefix || path.hasPrefix(prefix + "/") else {
            return .failure(.badPath)
        }
        guard request.method == "POST" else { return .failure(.methodNotAllowed) }
        if Self.hasDuplicateHeader(request.headers) { return .failure(.duplicateHeaders) }
        let token = path.dropFirst(prefix.count).drop { $0 == "/" }
        guard !token.isEmpty else { return .failure(.missingDeviceToken) }
        guard Self.isHexToken(token) else { return .failure(.badDeviceToken) }
        return .success(token.lowercased())
    }

    /// Checks `apns-push-type`, `apns-expiration`, `apns-priority`, `apns-topic` and `apns-collapse-id`.
    ///
    /// `apns-id` is checked by the caller first, because every answer echoes it.
    func headers(_ request: GatewayRequest) -> Result<ValidatedHeaders, APNsRejection> {
        let pushTypeName = request.value("apns-push-type") ?? "alert"
        guard let pushType = PushType.all[pushTypeName] else { return .failure(.invalidPushType) }
        if let expiration = request.value("apns-expiration") {
            guard !expiration.isEmpty, expiration.allSatisfy(\.isASCIIDigit), Int64(expiration) != nil else {
                return .failure(.badExpirationDate)
            }
        }
        let priority = request.value("apns-priority") ?? "10"
        guard ["10", "5", "1"].contains(priority) else { return .failure(.badPriority) }
        if pushType.name == "background", priority != "5" { return .failure(.badPriority) }
        guard let topic = request.value("apns-topic"), !topic.isEmpty else { return .failure(.missingTopic) }
        guard let bundleID = pushType.bundleID(fromTopic: topic), self.topics.contains(bundleID) else {
            return .failure(self.isTopicOfAnotherPushType(topic) ? .badTopic : .topicDisallowed)
        }
        if let collapseID = request.value("apns-collapse-id"), collapseID.utf8.count > 64 {
            return .failure(.badCollapseID)
        }
        return .success(ValidatedHeaders(pushType: pushType, topic: topic, bundleID: bundleID))
    }

    /// Checks the body size: empty is `PayloadEmpty`, over the push type's limit is `PayloadTooLarge`.
    func body(_ request: GatewayRequest, pushType: PushType) -> APNsRejection? {
        if request.bodyLength == 0 { return .payloadEmpty }
        if request.bodyLength > pushType.maximumPayloadSize { return .payloadTooLarge }
        return nil
    }

    /// Checks the device token against the registry.
    func device(
        _ token: String,
        topic: String,
        bundleID: String,
        in registry: DeviceRegistry
    ) -> APNsRejection? {
        guard let entry = registry.entry(for: token) else {
            return registry.requiresRegistration ? .badDeviceToken : nil
        }
        if let environment = entry.environment, environment != self.environment { return .badDeviceToken }
        if let boundTopic = entry.topic, boundTopic != topic, boundTopic != bundleID {
            return .deviceTokenNotForTopic
        }
        switch entry.state {
        case .active:
            return nil
        case .unregistered(let since):
            return .unregistered(timestampMs: Self.milliseconds(since.timeIntervalSince1970))
        case .expired(let since):
            return .expiredToken(timestampMs: Self.milliseconds(since.timeIntervalSince1970))
        }
    }

    /// `apns-id` must be a canonical UUID (8-4-4-4-12 hex digits); returns it unchanged when it is.
    static func isCanonicalUUID(_ value: String) -> Bool {
        var count = 0
        for byte in value.utf8 {
            switch count {
            case 8, 13, 18, 23: guard byte == UInt8(ascii: "-") else { return false }
            default: guard Self.isHexDigit(byte) else { return false }
            }
            count += 1
            if count > 36 { return false }
        }
        return count == 36
    }

    /// An even number of hex digits, nothing else.
    static func isHexToken(_ token: Substring) -> Bool {
        token.utf8.count % 2 == 0 && token.utf8.allSatisfy(Self.isHexDigit)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default: false
        }
    }

    /// Whether a header name other than `cookie` appears twice. A request has a handful of headers, so pairs are
    /// compared directly; a long list goes through a set.
    static func hasDuplicateHeader(_ headers: [(name: String, value: String)]) -> Bool {
        if headers.count > 16 {
            var seen = Set<String>()
            for header in headers where header.name != "cookie" {
                guard seen.insert(header.name).inserted else { return true }
            }
            return false
        }
        for i in headers.indices where headers[i].name != "cookie" {
            for j in headers.indices[(i + 1)...] where headers[j].name == headers[i].name { return true }
        }
        return false
    }

    static func milliseconds(_ seconds: Double) -> Int64 {
        Int64((seconds * 1000).rounded(.down))
    }

    private func isTopicOfAnotherPushType(_ topic: String) -> Bool {
        PushType.all.values.contains { type in
            type.bundleID(fromTopic: topic).map(self.topics.contains) ?? false
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { self.isASCII && self.isNumber }
}
