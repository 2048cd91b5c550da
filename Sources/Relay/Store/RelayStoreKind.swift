public import Logging
public import ServiceLifecycle

/// One kind of database the relay can keep its state in, chosen by the value of `--database`.
///
/// The relay's builder, its start line and `--database`'s help ask the kinds in ``RelayStoreKinds/all``; they name
/// none. Adding a store is a ``RelayStore`` conformance, a kind, and its entry in that list.
public protocol RelayStoreKind: Sendable {
    /// The store's name in the start line and in messages ("SQLite").
    var name: String { get }
    /// What `--database` takes for this kind, for the option's help ("a SQLite file (created if missing)").
    var argumentHelp: String { get }
    /// Whether a `--database` value names a store of this kind.
    func accepts(_ argument: String) -> Bool
    /// The start line's words for the store `argument` names. It never holds a password.
    func startDescription(_ argument: String, options: ServeOptions) -> String
    /// Opens the store `argument` names for a relay built from `options`.
    ///
    /// - Throws: `configuration` when `argument` is malformed, `storage-unavailable` when the store cannot be opened
    ///   or reached; nothing is left open when it throws.
    func open(_ argument: String, options: ServeOptions, logger: Logger) async throws(RelayError) -> OpenedRelayStore
}

extension RelayStoreKind {
    /// Runs `body` with the store `argument` names, opened as a relay opens it (its service running beside `body`,
    /// its startup done first), and closes it (its connections too) before returning.
    public func withStore<T>(
        _ argument: String,
        options: ServeOptions,
        logger: Logger,
        _ body: (any RelayStore) async throws -> T
    ) async throws -> T {
        let opened = try await self.open(argument, options: options, logger: logger)
        do {
            let value = try await withThrowingTaskGroup(of: Void.self) { group in
                if let service = opened.service { group.addTask { try await service.run() } }
                // Cancelling the service (a connection pool) closes its connections; the group waits for that.
                defer { group.cancelAll() }
                try await opened.startup?()
                return try await body(opened.store)
            }
            await opened.close()
            return value
        } catch {
            await opened.close()
            throw error
        }
    }
}

/// A store opened for the relay, with what the relay's `ServiceGroup` runs for it and what closes it.
public struct OpenedRelayStore: Sendable {
    public let store: any RelayStore
    /// Runs first in the relay's group, so that the group stops it last, once the server and the workers have
    /// drained (a connection pool); nil when the store needs nothing running.
    public let service: (any Service)?
    /// Runs once ``service`` runs and before the server and the workers start (waiting for the server to answer,
    /// migrating); nil when ``RelayStoreKind/open(_:options:logger:)`` did all of it. A failure stops the relay as
    /// a store that cannot be opened does.
    public let startup: (@Sendable () async throws(RelayError) -> Void)?
    /// Closes what `open` opened, once the relay's group has stopped.
    public let close: @Sendable () async -> Void

    public init(
        store: any RelayStore,
        service: (any Service)? = nil,
        startup: (@Sendable () async throws(RelayError) -> Void)? = nil,
        close: @escaping @Sendable () async -> Void
    ) {
        self.store = store
        self.service = service
        self.startup = startup
        self.close = close
    }
}

/// The kinds of store this relay can open, in the order `--database` is matched against them.
public enum RelayStoreKinds: Sendable {
    /// PostgreSQL takes `postgres://` URLs; SQLite, last, takes any other value as a file path.
    public static let all: [any RelayStoreKind] = [PostgresStoreKind(), SQLiteStoreKind()]

    /// The first kind of `kinds` that accepts `argument`; nil when none does.
    public static func kind(for argument: String, in kinds: [any RelayStoreKind] = all) -> (any RelayStoreKind)? {
        kinds.first { $0.accepts(argument) }
    }

    /// `--database`'s help: each kind's ``RelayStoreKind/argumentHelp``.
    public static var argumentHelp: String {
        all.map(\.argumentHelp).joined(separator: ", or ")
    }
}
