public import E2EECore
public import Logging

/// One push service the relay delivers through, as `e2ee-relay serve` configures it: its options, their checks,
/// its words in the start line, and what it opens (its clients, the rules of its addresses, its deliverer).
///
/// ``ServeOptions``, ``buildApplication(_:logger:storeKinds:pushServices:)`` and the start line ask the kinds in
/// ``RelayPushServiceKinds/all``; they name none. Adding a service is a folder next to `Delivery/APNs` (a
/// ``PushDeliverer``, its ``PushServiceRules`` and a kind, with an extension of ``ServeOptions`` that reads its
/// options), its entry in that list, and its flags in `e2ee-relay serve` (docs/EXTENDING.md §2).
public protocol RelayPushServiceKind: Sendable {
    /// The service this kind configures.
    var service: PushService { get }
    /// The service's own options (`apns-key-id`…), read from the flags, the environment and the configuration file
    /// with the relay's other options, and kept in ``ServeOptions/serviceValues``.
    var options: [ServeOptions.Option] { get }
    /// Checks the service's options, naming the option and what to do.
    ///
    /// - Throws: `configuration`.
    func check(_ options: ServeOptions) throws(RelayError)
    /// The longest one delivery attempt may take, in seconds, and what sets it ("APNs stream timeout"): a lease
    /// must outlast it, or a slow answer lets another worker send the same push again.
    func attemptTimeout(_ options: ServeOptions) -> (seconds: Int, name: String)
    /// The start line's words for the service: where it delivers, and for which apps.
    func startDescription(_ options: ServeOptions) -> String
    /// Reads the service's credentials and makes its clients (no connection is made yet).
    ///
    /// - Throws: `configuration`, saying what to fix; nothing is left open when it throws.
    func open(_ options: ServeOptions, logger: Logger) async throws(RelayError) -> OpenedPushService
}

/// A push service opened for the relay: the rules its API checks addresses with, the deliverer its workers deliver
/// through, and what closes its clients.
public struct OpenedPushService: Sendable {
    public let rules: any PushServiceRules
    public let deliverer: any PushDeliverer
    /// Shuts the service's clients down, once the relay's group has stopped (or the start failed).
    public let close: @Sendable () async -> Void

    public init(
        rules: any PushServiceRules,
        deliverer: any PushDeliverer,
        close: @escaping @Sendable () async -> Void
    ) {
        self.rules = rules
        self.deliverer = deliverer
        self.close = close
    }
}

/// The push services `e2ee-relay serve` delivers through.
public enum RelayPushServiceKinds: Sendable {
    public static let all: [any RelayPushServiceKind] = [APNsServiceKind()]

    /// Every option: the relay's own, then those of `services`.
    public static func options(_ services: [any RelayPushServiceKind] = Self.all) -> [ServeOptions.Option] {
        ServeOptions.commonOptions + services.flatMap(\.options)
    }
}
