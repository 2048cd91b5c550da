import Logging

/// A PostgreSQL server shared by several relays (`postgres://` or `postgresql://` URLs).
struct PostgresStoreKind: RelayStoreKind {
    var name: String { "PostgreSQL" }
    var argumentHelp: String { "a postgres:// URL" }

    func accepts(_ argument: String) -> Bool {
        argument.hasPrefix("postgres://") || argument.hasPrefix("postgresql://")
    }

    func startDescription(_ argument: String, options: ServeOptions) -> String {
        let seconds = options.databaseTimeout
        let timeout = seconds == seconds.rounded() && seconds < 1e6 ? "\(Int(seconds))" : "\(seconds)"
        return "PostgreSQL \(RelayServe.withoutPassword(argument)) (\(timeout) s per operation)"
    }

    func open(_ argument: String, options: ServeOptions, logger: Logger) async throws(RelayError) -> OpenedRelayStore {
        // One connection is tried here; the pool is a service of the relay's group. Waiting for it to answer and
        // migrating need it running, so they are the startup step, before the server and the workers start.
        let store = try await PostgresRelayStore.connect(
            url: argument,
            operationTimeout: .seconds(options.databaseTimeout),
            logger: logger
        )
        return OpenedRelayStore(
            store: store,
            service: store.clientService,
            startup: { () async throws(RelayError) in
                try await store.waitUntilAnswering()
                try await store.migrate()
            },
            close: {}
        )
    }
}
