public import E2EECore
import Foundation
import PushTransport

/// APNs' requests (docs/PROTOCOL.md §4): the uniform headers of ``PushBuilder/uniformHeaders(topic:)``, a
/// fresh `apns-id`, and the alert body of ``APNsAlertTransport``, to the device token of the device's APNs address.
public struct APNsFormat: PushFormat {
    /// The app's bundle id (`apns-topic`) for every push, instead of the topic of each device's APNs address
    /// (`--topic`); nil takes each address's topic, the bundle id the device registered its token for.
    public let topic: String?

    public init(topic: String? = nil) {
        self.topic = topic
    }

    public var service: PushService { .apns }
    public var padding: PaddingTable { APNsAlertTransport.padding }

    public func checkedAddress(_ address: String) throws(SenderError) -> String {
        try PushBuilder.validateDeviceToken(address)
    }

    public func destination(
        _ address: PushAddress?,
        overrides: PushOverrides,
        recipient: String
    ) throws(SenderError) -> @Sendable (SealedPush) -> any OutgoingPush {
        let apns = address?.apns
        guard let token = overrides.address ?? apns?.deviceToken else {
            throw SenderError(.unknownRecipient, "no APNs device token for \(recipient)")
        }
        let validToken = try self.checkedAddress(token)
        guard let topic = overrides.topic ?? self.topic ?? apns?.topic, !topic.isEmpty else {
            throw SenderError(
                .unknownRecipient,
                "no APNs topic for \(recipient): pass --topic BUNDLE_ID or use a card with an APNs \"push\" address"
            )
        }
        return { sealed in
            APNsRequest(
                deviceToken: validToken,
                headers: PushBuilder.uniformHeaders(topic: topic),
                body: sealed.apnsBodyString
            )
        }
    }

    public func request(fromLine line: String) throws(SenderError) -> any OutgoingPush {
        try APNsRequest.parse(requestLine: line)
    }
}
