public import Foundation
public import PushTransport

/// The device tokens the gateway knows about, and what it answers for each.
///
/// By default the registry is open: every well-formed hex token is accepted. Tokens can be marked unregistered
/// (`410 Unregistered`) or expired (`410 ExpiredToken`), with the time they stopped being valid (the response's
/// `timestamp`). A token may be bound to a topic (another topic gets `400 DeviceTokenNotForTopic`) and to an
/// environment (the other environment gets `400 BadDeviceToken`).
///
/// In strict mode (``requiresRegistration``) a token that was never registered gets `400 BadDeviceToken`: that is
/// what APNs answers for a token it does not know (a token from another environment or a made-up one), whereas
/// 410 means "this token was valid and no longer is", which a provider acts on by deleting the token.
public struct DeviceRegistry: Sendable, Hashable {
    /// What the gateway answers for one token.
    public enum State: Sendable, Hashable {
        /// Accepted.
        case active
        /// `410 Unregistered`, with the time the app was removed as `timestamp`.
        case unregistered(since: Date)
        /// `410 ExpiredToken`, with the time the token expired as `timestamp`.
        case expired(since: Date)
    }

    /// One registered token.
    public struct Entry: Sendable, Hashable {
        /// The token's state.
        public var state: State
        /// The topic the token belongs to; `nil` accepts any allowed topic.
        public var topic: String?
        /// The environment the token belongs to; `nil` accepts both.
        public var environment: APNsEnvironment?

        /// Creates an entry.
        ///
        /// - Parameters:
        ///   - state: The token's state (default active).
        ///   - topic: The bundle id or topic the token belongs to (default any).
        ///   - environment: The environment the token belongs to (default both).
        public init(state: State = .active, topic: String? = nil, environment: APNsEnvironment? = nil) {
            self.state = state
            self.topic = topic
            self.environment = environment
        }
    }

    /// When `true`, tokens that were never registered are refused with `400 BadDeviceToken`.
    public var requiresRegistration: Bool
    /// The registered tokens by lowercase hex.
    public private(set) var entries: [String: Entry]

    /// Creates an empty registry.
    ///
    /// - Parameter requiresRegistration: Whether unknown tokens are refused (default `false`: open).
    public init(requiresRegistration: Bool = false) {
        self.requiresRegistration = requiresRegistration
        self.entries = [:]
    }

    /// Registers (or replaces) a token.
    ///
    /// - Parameters:
    ///   - token: The token as hex (any case).
    ///   - entry: Its state, topic and environment.
    public mutating func register(_ token: String, _ entry: Entry = Entry()) {
        self.entries[token.lowercased()] = entry
    }

    /// Marks a token unregistered: later pushes get `410 Unregistered` with `timestamp` = `date`.
    ///
    /// - Parameters:
    ///   - token: The token as hex (any case).
    ///   - date: When the token stopped being valid.
    public mutating func markUnregistered(_ token: String, at date: Date) {
        var entry = self.entries[token.lowercased()] ?? Entry()
        entry.state = .unregistered(since: date)
        self.entries[token.lowercased()] = entry
    }

    /// Marks a token expired: later pushes get `410 ExpiredToken` with `timestamp` = `date`.
    ///
    /// - Parameters:
    ///   - token: The token as hex (any case).
    ///   - date: When the token expired.
    public mutating func markExpired(_ token: String, at date: Date) {
        var entry = self.entries[token.lowercased()] ?? Entry()
        entry.state = .expired(since: date)
        self.entries[token.lowercased()] = entry
    }

    /// Removes a token from the registry.
    ///
    /// - Parameter token: The token as hex (any case).
    public mutating func remove(_ token: String) {
        self.entries[token.lowercased()] = nil
    }

    /// The entry for a token, if registered.
    ///
    /// - Parameter token: The token as hex (any case).
    /// - Returns: The entry, or `nil` when the token was never registered.
    public func entry(for token: String) -> Entry? {
        self.entries[token.lowercased()]
    }
}
