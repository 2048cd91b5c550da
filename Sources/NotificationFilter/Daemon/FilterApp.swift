public import E2EECore
public import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Everything `e2ee-filter` is configured with; the executable parses flags into this and calls ``FilterApp``.
public struct FilterAppOptions: Sendable {
    /// One account: an identity file, its contacts, and how to unlock it.
    public struct Account: Sendable, Codable {
        public var name: String?
        public var identity: String
        /// A folder of `*.card.json` contact cards whose senders this account accepts.
        public var contacts: String
        /// A file holding the passphrase of a locked identity; while it is absent the account stays locked.
        public var passphraseFile: String?
        /// The account's public card: gives its key ids while the identity is locked.
        public var card: String?

        public init(
            name: String? = nil,
            identity: String,
            contacts: String,
            passphraseFile: String? = nil,
            card: String? = nil
        ) {
            self.name = name
            self.identity = identity
            self.contacts = contacts
            self.passphraseFile = passphraseFile
            self.card = card
        }

        enum CodingKeys: String, CodingKey {
            case name, identity, contacts, card
            case passphraseFile = "passphrase_file"
        }
    }

    public var accounts: [Account]
    public var statePath: String
    public var decisionsPath: String?
    public var eventsPath: String?
    public var hookCommand: String?
    public var input: FilterDaemonConfiguration.Input = .standardInput
    public var exitAtEndOfInput = false
    public var policy = FilterPolicy()
    public var callProvider = CallProviderConfiguration()
    public var now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }

    public init(accounts: [Account], statePath: String) {
        self.accounts = accounts
        self.statePath = statePath
    }
}

/// Builds the filter from options: state, accounts, call reporter, event outbox, engine, daemon.
public enum FilterApp: Sendable {
    /// The pieces of a running filter (tests inspect the reporter's counters).
    public struct Parts: Sendable {
        public let engine: FilterEngine
        public let daemon: FilterDaemon
        public let reporter: CallKitReporter
        public let outbox: EventOutbox
    }

    /// Builds everything `run` needs.
    ///
    /// - Throws: a ``FilterDaemonError`` or E2EE error whose message says which file is wrong and what to do.
    public static func build(_ options: FilterAppOptions, logger: Logger) throws -> Parts {
        let store = try FilterStateStore(path: options.statePath, logger: logger)
        let hook = try options.hookCommand.map { try HookCommandCallEventSink(command: $0, logger: logger) }
        let outbox = try EventOutbox(store: store, eventsPath: options.eventsPath, forward: hook, logger: logger)
        let reporter = CallKitReporter(
            configuration: options.callProvider,
            sink: outbox,
            now: options.now,
            logger: logger
        )
        let accounts = try options.accounts.map { try self.loadAccount($0, logger: logger) }
        let engine = try FilterEngine(
            store: store,
            accounts: accounts,
            policy: options.policy,
            reporter: reporter,
            now: options.now,
            logger: logger
        )
        var configuration = FilterDaemonConfiguration(input: options.input, decisionsPath: options.decisionsPath)
        configuration.exitAtEndOfInput = options.exitAtEndOfInput
        var lockedAccounts: [String: PassphraseUnlocker.Account] = [:]
        for (account, accountOptions) in zip(accounts, options.accounts) where lockedAccounts[account.name] == nil {
            lockedAccounts[account.name] = .init(
                identity: accountOptions.identity,
                passphraseFile: accountOptions.passphraseFile
            )
        }
        // Argon2id runs once per version of a passphrase file: a wrong or insecure one is reported once and tried
        // again when it changes, not on every tick.
        let unlocker = PassphraseUnlocker(accounts: lockedAccounts, logger: logger)
        let daemon = FilterDaemon(
            configuration: configuration,
            engine: engine,
            events: outbox,
            unlock: { name in unlocker.unlock(name) },
            logger: logger
        )
        return Parts(engine: engine, daemon: daemon, reporter: reporter, outbox: outbox)
    }

    /// Loads one account: unlocked if its identity is plain or its passphrase file is there, else locked.
    static func loadAccount(_ options: FilterAppOptions.Account, logger: Logger) throws -> FilterAccount {
        let contacts = try self.loadContacts(folder: options.contacts, logger: logger)
        if try Identity.isLocked(path: options.identity) {
            if let file = options.passphraseFile, let passphrase = try? SecretFile.readPassphrase(path: file) {
                let identity = try Identity.load(path: options.identity, passphrase: passphrase)
                return FilterAccount(name: options.name, identity: identity, contacts: contacts)
            }
            let card = try options.card.map { try DeviceList.load(path: $0) }
            let fileName = options.identity.split(separator: "/").last.map(String.init) ?? options.identity
            let name =
                options.name ?? card?.userID
                ?? (fileName.hasSuffix(".identity") ? String(fileName.dropLast(9)) : fileName)
            return FilterAccount(
                lockedName: name,
                deviceKeyIDs: Set(card?.devices.flatMap { $0.deviceKeys.map(\.keyID) } ?? []),
                contacts: contacts
            )
        }
        return FilterAccount(
            name: options.name,
            identity: try Identity.load(path: options.identity),
            contacts: contacts
        )
    }

    /// Every valid `*.card.json` in a folder.
    ///
    /// A card that cannot be read or is invalid (a key id that does not match its key, bad JSON...) is refused on
    /// its own: logged once as an error (its path and what is wrong, never key bytes) and left out, so the other
    /// contacts keep working and the refused card's sender is an unknown sender.
    ///
    /// - Throws: ``FilterDaemonError`` when the folder itself cannot be read.
    public static func loadContacts(folder: String, logger: Logger) throws -> ContactBook {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder)
        } catch {
            throw FilterDaemonError("cannot read the contacts folder \(folder): check the path")
        }
        var book = ContactBook()
        for name in names.sorted() where name.hasSuffix(".card.json") {
            let path = folder + "/" + name
            do {
                book.add(try DeviceList.load(path: path))
            } catch {
                // The message names the file and the problem; E2EEError messages never hold key material.
                logger.error(
                    "contact card refused: \(error.message); its sender is treated as unknown until the card is fixed",
                    metadata: ["card": "\(path)"]
                )
            }
        }
        return book
    }
}
