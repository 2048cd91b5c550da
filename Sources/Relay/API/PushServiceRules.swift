public import E2EECore
public import RelayClient

/// What the relay's API needs to know of a push service (docs/EXTENDING.md §2): which addresses a device may
/// register for it, and the padding of the envelopes sealed to its devices. ``RelayService`` takes one value per
/// service the relay delivers through; a second service is a second conformance next to its ``PushDeliverer``, and
/// ``RelayService`` does not change.
public protocol PushServiceRules: Sendable {
    /// The service these rules are for.
    var service: PushService { get }

    /// The service's name in messages ("APNs"); by default its ``PushService`` name.
    var displayName: String { get }

    /// The padding table of the service's transport: an envelope submitted to a device of this service has one of
    /// its lengths (docs/PROTOCOL.md §6), so the deliverer can frame it.
    var padding: PaddingTable { get }

    /// Checks an address a device registers (already well formed by the relay's common rules) and returns it as it
    /// is stored.
    ///
    /// - Throws: the refusal, with a reason code and what to do.
    func registration(_ address: RegisteredAddress) throws(RelayError) -> RegisteredAddress
}

extension PushServiceRules {
    public var displayName: String { self.service.rawValue }
}
