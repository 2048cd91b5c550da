public import E2EECore

/// What a send sets for one push instead of what the recipient's card says: an address of the device's service
/// (`--device-token`, a batch line's `"device_token"`) and an APNs topic (`--topic`, `"topic"`). A format reads the
/// ones its service has.
public struct PushOverrides: Sendable, Hashable {
    /// An address of the device's service to send to instead of the card's (for APNs, a device token).
    public var address: String?
    /// The APNs topic (the app's bundle id) of this push, instead of the format's and the card's.
    public var topic: String?

    public init(address: String? = nil, topic: String? = nil) {
        self.address = address
        self.topic = topic
    }
}

/// How one push service's requests are made from sealed envelopes: the sending half of a push service, next to its
/// ``PushClient`` (docs/EXTENDING.md §2). ``PushBuilder`` frames each device's push with the format of the service of
/// the device's push address; ``APNsFormat`` is APNs'. A second service conforms a format of its own, and the
/// builder does not change.
public protocol PushFormat: Sendable {
    /// The service whose addresses it frames for (``PushAddress/service``).
    var service: PushService { get }
    /// The padding buckets its bodies fit: its transport's (``PushTransport/padding``).
    var padding: PaddingTable { get }
    /// Checks an address given for a push instead of the card's (``PushOverrides/address``) and returns it as this
    /// service's requests carry it.
    ///
    /// - Throws: `.badDeviceToken` naming the rule the address breaks.
    func checkedAddress(_ address: String) throws(SenderError) -> String
    /// Checks what a push to one device needs before anything is sealed, and returns what frames its sealed envelope
    /// into this service's request.
    ///
    /// - Parameters:
    ///   - address: the device's push address, of this service; nil when the device has none and
    ///     `overrides.address` names one.
    ///   - overrides: what the send sets instead of the card.
    ///   - recipient: the device, as messages name it (`bob's device "phone"`).
    /// - Throws: `.unknownRecipient` when the push cannot be addressed (no address, no topic), `.badDeviceToken`.
    func destination(
        _ address: PushAddress?,
        overrides: PushOverrides,
        recipient: String
    ) throws(SenderError) -> @Sendable (SealedPush) -> any OutgoingPush

    /// Reads one of this service's request lines, as ``OutgoingPush/jsonLine(device:)`` prints them, to send it as
    /// it is (`e2ee-send deliver`). A line names its service by a top-level `"service"` key, except a line of the
    /// first format of the list ``BatchRequests/prepareRequestLine(_:formats:)`` is given (APNs' lines name none).
    ///
    /// - Throws: `.badRequest` saying what the line lacks; the message never repeats the line (it may hold an
    ///   envelope).
    func request(fromLine line: String) throws(SenderError) -> any OutgoingPush
}
