import Logging

/// An embedded SQLite file (one relay process): opened and migrated by ``open(_:options:logger:)`` itself.
struct SQLiteStoreKind: RelayStoreKind {
    var name: String { "SQLite" }
    var argumentHelp: String { "a SQLite file (created if missing)" }

    func accepts(_ argument: String) -> Bool { true }

    func startDescription(_ argument: String, options: ServeOptions) -> String { "SQLite \(argument)" }

    func open(_ argument: String, options: ServeOptions, logger: Logger) async throws(RelayError) -> OpenedRelayStore {
        let store = try SQLiteRelayStore(path: argument)
        do throws(RelayError) { try await store.migrate() } catch {
            await store.close()
            throw error
        }
        return OpenedRelayStore(store: store, close: { await store.close() })
    }
}
