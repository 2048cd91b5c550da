public import E2EECore
public import RelayClient

/// What delivers leased pushes to a push service (docs/RELAY.md "Queue and delivery"): ``DeliveryService`` leases
/// pushes, hands each one's address and envelope to its deliverer, and records the typed outcome the deliverer
/// reports. The queue holds envelopes, not a service's bodies, so a second push service is a second conformance
/// that frames envelopes its own way (``APNsDeliverer`` frames them with `APNsAlertTransport`); ``DeliveryService``
/// does not change.
///
/// A deliverer never throws: every push gets a report, in order, whatever happened to it (a request that could not
/// be made is a report too, `retryLater` or `rejected`).
public protocol PushDeliverer: Sendable {
    /// The push service this deliverer delivers through: ``DeliveryService`` hands it only addresses of that service
    /// (a push whose address is of another service fails with `unsupported-push-service`).
    var service: PushService { get }

    /// Delivers `pushes` and reports what became of each.
    ///
    /// - Returns: one report per push, in the order of `pushes`.
    func deliver(_ pushes: [PushDelivery]) async -> [DeliveryReport]
}

/// One leased push as a deliverer gets it.
public struct PushDelivery: Sendable, Hashable {
    /// The push id (APNs uses it as the `apns-id`).
    public var pushID: String
    /// The device's push address when the push was leased: by a worker's lease, the one registered then; for a push
    /// leased at its submit's commit (``DeliveryHandoff``), the one the submit was checked against.
    public var address: RegisteredAddress
    /// The envelope bytes as submitted (checked against the APNs padding table at submit): the deliverer frames
    /// them into its service's body.
    public var envelope: [UInt8]
    /// This push's attempt number, from 1.
    public var attempt: Int

    public init(pushID: String, address: RegisteredAddress, envelope: [UInt8], attempt: Int) {
        self.pushID = pushID
        self.address = address
        self.envelope = envelope
        self.attempt = attempt
    }
}

/// What became of one push at its push service, as ``DeliveryService`` records it.
public struct DeliveryReport: Sendable, Hashable {
    /// What the service did with the push.
    public enum Outcome: Sendable, Hashable {
        /// The service accepted the push.
        case delivered
        /// The address is dead (APNs 410, or a 410 its client remembers): the push is `unregistered` and so is the
        /// address until the device registers again. `sinceMs`: since when, if the service said.
        case unregistered(sinceMs: Int64?)
        /// The service refuses the address for good (APNs 400 `BadDeviceToken`, `DeviceTokenNotForTopic`,
        /// `TopicDisallowed`, `BadTopic`): the push fails and the address is marked failed with `reason`.
        case addressRefused(reason: String)
        /// The push failed and sending it again cannot help (any other refusal, an address or envelope the
        /// deliverer cannot use): the push is `failed` with `reason`; the address stays.
        case rejected(reason: String)
        /// Not delivered this time (rate limited, a fault of the service or of the relay's credentials, no answer):
        /// sent again after the relay's backoff, or no sooner than `retryAfterMs` when the service asked for that,
        /// until the attempts run out.
        case retryLater(reason: String?, retryAfterMs: Int64?)
    }

    /// What the attempt tells readiness about the service (docs/RELAY.md "Health").
    public enum ServiceSignal: Sendable, Hashable {
        /// The service answered, with anything but a fault of the relay's own: delivery works.
        case answered
        /// The service answered with a fault of the relay's own (its credentials, its rate, a server error); the
        /// message says what to check.
        case refused(String)
        /// The service could not be reached or did not answer.
        case unreachable(String)
        /// Nothing was asked of the service: the attempt says nothing about it.
        case notAsked
    }

    public var outcome: Outcome
    /// The service's status code when it answered (APNs' HTTP status), recorded with the push.
    public var status: Int?
    /// The metrics label of the attempt: the service's status (`200`, `410`) or `local-<what>` when it did not
    /// answer.
    public var label: String
    public var signal: ServiceSignal

    public init(outcome: Outcome, status: Int? = nil, label: String, signal: ServiceSignal) {
        self.outcome = outcome
        self.status = status
        self.label = label
        self.signal = signal
    }
}
