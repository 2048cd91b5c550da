/// The `apns-push-type` values APNs accepts, with the topic suffix each requires and its payload limit.
struct PushType: Sendable, Hashable {
    let name: String
    /// What `apns-topic` must end with after the bundle id.
    let topicSuffix: String
    /// The largest body accepted.
    let maximumPayloadSize: Int

    static let all: [String: PushType] = {
        let list = [
            PushType(name: "alert", topicSuffix: "", maximumPayloadSize: 4096),
            PushType(name: "background", topicSuffix: "", maximumPayloadSize: 4096),
            PushType(name: "voip", topicSuffix: ".voip", maximumPayloadSize: 5120),
            PushType(name: "complication", topicSuffix: ".complication", maximumPayloadSize: 4096),
            PushType(name: "fileprovider", topicSuffix: ".pushkit.fileprovider", maximumPayloadSize: 4096),
            PushType(name: "location", topicSuffix: ".location-query", maximumPayloadSize: 4096),
            PushType(name: "liveactivity", topicSuffix: ".push-type.liveactivity", maximumPayloadSize: 4096),
            PushType(name: "pushtotalk", topicSuffix: ".voip-ptt", maximumPayloadSize: 4096),
            PushType(name: "widgets", topicSuffix: ".push-type.widgets", maximumPayloadSize: 4096),
            PushType(name: "controls", topicSuffix: ".push-type.controls", maximumPayloadSize: 4096),
            PushType(name: "mdm", topicSuffix: "", maximumPayloadSize: 4096),
        ]
        return Dictionary(uniqueKeysWithValues: list.map { ($0.name, $0) })
    }()

    /// The bundle id inside `topic` if it carries this type's suffix.
    func bundleID(fromTopic topic: String) -> String? {
        guard topic.hasSuffix(self.topicSuffix) else { return nil }
        let bundle = String(topic.dropLast(self.topicSuffix.count))
        return bundle.isEmpty ? nil : bundle
    }
}
