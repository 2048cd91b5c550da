/// One APNs error answer: status, reason string and, for 410, the time the token stopped being valid.
struct APNsRejection: Sendable, Hashable, Error {
    var status: Int
    var reason: String
    /// Milliseconds since 1970, only for 410.
    var timestampMs: Int64?

    init(_ status: Int, _ reason: String, timestampMs: Int64? = nil) {
        self.status = status
        self.reason = reason
        self.timestampMs = timestampMs
    }

    /// The JSON body: `{"reason":"..."}`, plus `"timestamp"` for 410.
    var jsonBody: String {
        // Reasons are ASCII identifiers from APNs' table, so no escaping is needed.
        if let timestampMs {
            return #"{"reason":"\#(self.reason)","timestamp":\#(timestampMs)}"#
        }
        return #"{"reason":"\#(self.reason)"}"#
    }

    static let badCollapseID = APNsRejection(400, "BadCollapseId")
    static let badDeviceToken = APNsRejection(400, "BadDeviceToken")
    static let badExpirationDate = APNsRejection(400, "BadExpirationDate")
    static let badMessageID = APNsRejection(400, "BadMessageId")
    static let badPriority = APNsRejection(400, "BadPriority")
    static let badTopic = APNsRejection(400, "BadTopic")
    static let deviceTokenNotForTopic = APNsRejection(400, "DeviceTokenNotForTopic")
    static let duplicateHeaders = APNsRejection(400, "DuplicateHeaders")
    static let invalidPushType = APNsRejection(400, "InvalidPushType")
    static let missingDeviceToken = APNsRejection(400, "MissingDeviceToken")
    static let missingTopic = APNsRejection(400, "MissingTopic")
    static let payloadEmpty = APNsRejection(400, "PayloadEmpty")
    static let topicDisallowed = APNsRejection(400, "TopicDisallowed")
    static let expiredProviderToken = APNsRejection(403, "ExpiredProviderToken")
    static let invalidProviderToken = APNsRejection(403, "InvalidProviderToken")
    static let missingProviderToken = APNsRejection(403, "MissingProviderToken")
    static let unrelatedKeyIDInToken = APNsRejection(403, "UnrelatedKeyIdInToken")
    static let badEnvironmentKeyIDInToken = APNsRejection(403, "BadEnvironmentKeyIdInToken")
    static let badPath = APNsRejection(404, "BadPath")
    static let methodNotAllowed = APNsRejection(405, "MethodNotAllowed")
    static let payloadTooLarge = APNsRejection(413, "PayloadTooLarge")
    static let tooManyProviderTokenUpdates = APNsRejection(429, "TooManyProviderTokenUpdates")
    static let tooManyRequests = APNsRejection(429, "TooManyRequests")
    static let internalServerError = APNsRejection(500, "InternalServerError")
    static let serviceUnavailable = APNsRejection(503, "ServiceUnavailable")

    static func unregistered(timestampMs: Int64) -> APNsRejection {
        APNsRejection(410, "Unregistered", timestampMs: timestampMs)
    }

    static func expiredToken(timestampMs: Int64) -> APNsRejection {
        APNsRejection(410, "ExpiredToken", timestampMs: timestampMs)
    }
}
