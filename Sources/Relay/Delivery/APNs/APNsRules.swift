public import E2EECore
import PushTransport
public import RelayClient

/// The APNs rules: an `<topic>/<device token>` address, stored with the token in lower case, in an environment
/// this relay has a client for, for one of the app's topics.
public struct APNsRules: PushServiceRules {
    /// The app's topics (bundle ids) this relay delivers for: an address for another topic is refused
    /// (`topic-not-allowed`). Empty: any topic (tests of the API alone; `e2ee-relay serve` requires them).
    public var topics: Set<String>
    /// The APNs environments this relay can deliver to (those it has a client for).
    public var environments: Set<String>

    public init(topics: Set<String> = [], environments: Set<String> = RegisteredAddress.apnsEnvironments) {
        self.topics = topics
        self.environments = environments
    }

    public var service: PushService { .apns }

    public var displayName: String { "APNs" }

    public var padding: PaddingTable { APNsAlertTransport.padding }

    public func registration(_ received: RegisteredAddress) throws(RelayError) -> RegisteredAddress {
        guard let apns = received.push.apns, let environment = received.environment else {
            throw RelayError(.badPushAddress, "an apns address is <topic>/<device token> with an environment")
        }
        guard self.topics.isEmpty || self.topics.contains(apns.topic) else {
            throw RelayError(
                .topicNotAllowed,
                "this relay delivers for \(self.topics.sorted().joined(separator: ", ")) only; topic "
                    + "\"\(apns.topic)\" belongs to another app (APNs would refuse it: TopicDisallowed)"
            )
        }
        guard self.environments.contains(environment) else {
            throw RelayError(
                .unsupportedEnvironment,
                "this relay delivers to \(self.environments.sorted().joined(separator: ", ")) only"
            )
        }
        // Stored with the token in lower case (the signature is checked over what was received).
        return RegisteredAddress(
            apns: APNsAddress(topic: apns.topic, deviceToken: apns.deviceToken.lowercased()),
            environment: environment
        )
    }
}
