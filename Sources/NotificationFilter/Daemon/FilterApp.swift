import Dispatch
public import E2EECore
public import Logging
public import PushTransport

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
        /// The account's own device list (its user's public card). It is a contact too, so the user's other
        /// devices are accepted senders; it gives this device's key ids while the identity is locked. Default: the
        /// contacts folder's list of the identity's user id, if there is one.
        public var card: String?
        /// This device's id in the own list; needed only while the identity is locked and the list has several
        /// devices (an unlocked identity knows its device id).
        public var deviceID: String?

        public init(
            name: String? = nil,
            identity: String,
            contacts: String,
            passphraseFile: String? = nil,
            card: String? = nil,
            deviceID: String? = nil
        ) {
            self.name = name
            self.identity = identity
            self.contacts = contacts
            self.passphraseFile = passphraseFile
            self.card = card
            self.deviceID = deviceID
        }

        enum CodingKeys: String, CodingKey {
            case name, identity, contacts, card
            case passphraseFile = "passphrase_file"
            case deviceID = "device_id"
        }
    }

    public var accounts: [Account]
    public var statePath: String
    public var decisionsPath: String?
    public var eventsPath: String?
    public var hookCommand: String?
    public var input: FilterDaemonConfiguration.Input = .standardInput
    public var exitAtEndOfInput = false
    /// This device's push token: spool lines for other tokens are skipped (``FilterDaemonConfiguration/deviceToken``).
    public var deviceToken: String?
    public var policy = FilterPolicy()
    /// The push service whose bodies the device receives (APNs; `e2ee-filter --transport`, from
    /// `PushTransports.all`).
    public var transport: any PushTransport.Type = APNsAlertTransport.self
    public var callProvider = CallProviderConfiguration()
    /// The wall clock every part of the filter reads (tests fix or advance it; the executable has only the real one).
    public var clock: WallClock = .system

    public init(accounts: [Account], statePath: String) {
        self.accounts = accounts
        self.statePath = statePath
    }
}

extension FilterAppOptions.Account {
    /// The accounts of an accounts file (`e2ee-filter --config`): `{"accounts":[{"identity":...,"contacts":...}]}`,
    /// each with the keys of ``FilterAppOptions/Account`` (`name`, `passphrase_file`, `card`, `device_id`).
    ///
    /// - Throws: ``FilterError`` `.configUnreadable` when the file cannot be read, `.configInvalid` saying what is
    ///   wrong (which key is missing or of the wrong type, or that it is not JSON; never a Swift type dump).
    public static func load(configFile path: String) throws(FilterError) -> [Self] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FilterError(code: .configUnreadable, message: "cannot read --config \(path): check the path")
        }
        struct File: Decodable { var accounts: [FilterAppOptions.Account] }
        do {
            return try JSONDecoder().decode(File.self, from: data).accounts
        } catch {
            throw FilterError(
                code: .configInvalid,
                message: "--config \(path) is not {\"accounts\":[{\"identity\":...,\"contacts\":...}]}: "
                    + Self.describe(error)
            )
        }
    }

    /// What is wrong with an accounts file, for people.
    static func describe(_ error: any Error) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            let at = path(context.codingPath)
            return "\"\(key.stringValue)\" is missing at \(at.isEmpty ? "the top" : at)"
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            return "\(path(context.codingPath)) has the wrong type (\(context.debugDescription))"
        case .dataCorrupted(let context)?:
            return "it is not valid JSON (\(context.debugDescription))"
        default:
            return "it cannot be read as JSON"
        }
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
    /// - Throws: a ``FilterError`` or E2EE error whose message says which file is wrong and what to do.
    public static func build(_ options: FilterAppOptions, logger: Logger) throws -> Parts {
        // Each account's contact cards (two Ed25519 checks or more each) are read on a thread of Dispatch's pool
        // while this one opens the state and reads the identities (an X-Wing key is an ML-KEM key generation from
        // its seed): `once`, a process per push, waits for all of it before it can open the payload. Errors keep
        // their order: the state's, then each account's contacts, card and identity.
        let contacts = options.accounts.map { account in
            Background { try self.loadContacts(folder: account.contacts, logger: logger) }
        }
        let store = try FilterStateStore(path: options.statePath, logger: logger)
        let hook = try options.hookCommand.map { try HookCommandCallEventSink(command: $0, logger: logger) }
        let outbox = try EventOutbox(store: store, eventsPath: options.eventsPath, forward: hook, logger: logger)
        let reporter = CallKitReporter(
            configuration: options.callProvider,
            sink: outbox,
            clock: options.clock,
            logger: logger
        )
        let accounts = try zip(options.accounts, contacts).map { account, contacts in
            try self.loadAccount(account, contacts: try contacts.result.get(), logger: logger)
        }
        let engine = try FilterEngine(
            store: store,
            accounts: accounts,
            policy: options.policy,
            reporter: reporter,
            clock: options.clock,
            transport: options.transport,
            logger: logger
        )
        var configuration = FilterDaemonConfiguration(input: options.input, decisionsPath: options.decisionsPath)
        configuration.exitAtEndOfInput = options.exitAtEndOfInput
        configuration.deviceToken = options.deviceToken
        configuration.transport = options.transport
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
        // A key rotation rewrites the identity file: `run` reads the new version before its next batch.
        let watcher = IdentityFileWatcher(
            accounts: zip(accounts, options.accounts).map { account, accountOptions in
                .init(
                    name: account.name,
                    identity: accountOptions.identity,
                    passphraseFile: accountOptions.passphraseFile
                )
            },
            logger: logger
        )
        let daemon = FilterDaemon(
            configuration: configuration,
            engine: engine,
            events: outbox,
            unlock: { name in unlocker.unlock(name) },
            identityChanges: { watcher.changed() },
            logger: logger
        )
        return Parts(engine: engine, daemon: daemon, reporter: reporter, outbox: outbox)
    }

    /// Decides one payload and returns the lines to print, as `e2ee-filter once` (an extension launched per push)
    /// does: this payload's one decision, after the payloads a locked `run` kept (they are older) are decided and
    /// recorded; while the keys are locked, the payload is kept for `run` and its line is the generic fallback
    /// alert.
    ///
    /// - Parameters:
    ///   - payload: a request line or an APNs body (trailing newlines are ignored).
    ///   - options: the same options as `run`; the state file is shared with it, so both decide alike.
    /// - Throws: what ``build(_:logger:)`` throws, and the state file's errors.
    public static func once(_ payload: [UInt8], options: FilterAppOptions, logger: Logger) async throws -> [String] {
        var lines: [String] = []
        try await self.once(payload, options: options, logger: logger) { lines = $0 }
        return lines
    }

    /// ``once(_:options:logger:)``, handing the lines to `output` as soon as the decision is committed: before the
    /// state file is closed, since closing the last connection checkpoints the write-ahead log (two more fsyncs)
    /// and an extension launched per push waits for the decision, not for the checkpoint.
    public static func once(
        _ payload: [UInt8],
        options: FilterAppOptions,
        logger: Logger,
        output: ([String]) -> Void
    ) async throws {
        var end = payload.endIndex
        while end > payload.startIndex, payload[end - 1] == 0x0A || payload[end - 1] == 0x0D { end -= 1 }
        let parts = try self.build(options, logger: logger)
        // Payloads a locked `run` kept are decided (and logged) before this newer one, which would otherwise wait
        // behind them.
        if await !parts.engine.isLocked, await parts.engine.hasKeptPayloads {
            _ = try await parts.engine.decideKept()
        }
        let outcome = try await parts.engine.process(
            [PayloadInput.parse(line: Array(payload[..<end]), defaultSeq: 1)],
            deduplicateBySeq: false
        )
        var lines = outcome.lines
        if outcome.decisions.isEmpty && outcome.keptWhileLocked > 0 {
            // Keys are locked: the payload is kept for `run` to decide after unlock; show the generic alert.
            var decision = FilterDecision(seq: 1, apnsID: nil, decision: .fallback, reason: .locked)
            decision.alert = FilterDecision.fallbackAlert
            lines.append(decision.jsonLine())
        }
        // The state (and its connection) lives until the lines are out.
        withExtendedLifetime(parts) { output(lines) }
    }

    /// Loads one account: unlocked if its identity is plain or its passphrase file is there, else locked.
    ///
    /// The own device list is `--card`, else the contacts folder's list of the account's user id. Given with
    /// `--card`, it must list this device with the identity's signing key.
    static func loadAccount(_ options: FilterAppOptions.Account, logger: Logger) throws -> FilterAccount {
        try self.loadAccount(
            options,
            contacts: try self.loadContacts(folder: options.contacts, logger: logger),
            logger: logger
        )
    }

    /// ``loadAccount(_:logger:)`` with the account's contacts already read.
    static func loadAccount(
        _ options: FilterAppOptions.Account,
        contacts: ContactBook,
        logger: Logger
    ) throws -> FilterAccount {
        let card = try options.card.map { try DeviceList.load(path: $0) }
        if try Identity.isLocked(path: options.identity) {
            return try self.lockedAccount(options, contacts: contacts, card: card, logger: logger)
        }
        return try self.unlockedAccount(
            try Identity.load(path: options.identity),
            contacts: contacts,
            card: card,
            options,
            logger: logger
        )
    }

    /// Work started on a thread of Dispatch's pool; ``result`` waits for it.
    final class Background<Value: Sendable>: @unchecked Sendable {
        private let group = DispatchGroup()
        /// Written once by the work, before the group is left; read only after `wait()`, which orders the two.
        private var outcome: Result<Value, any Error>?

        init(_ work: @escaping @Sendable () throws -> Value) {
            DispatchQueue.global().async(group: self.group) { self.outcome = Result { try work() } }
        }

        var result: Result<Value, any Error> {
            self.group.wait()
            return self.outcome!
        }
    }

    /// An account whose identity is locked: unlocked now if its passphrase file is there, else kept locked.
    private static func lockedAccount(
        _ options: FilterAppOptions.Account,
        contacts: ContactBook,
        card: DeviceList?,
        logger: Logger
    ) throws -> FilterAccount {
        if let file = options.passphraseFile, let passphrase = try? SecretFile.readPassphrase(path: file) {
            let identity = try Identity.load(path: options.identity, passphrase: passphrase)
            return try self.unlockedAccount(identity, contacts: contacts, card: card, options, logger: logger)
        }
        let fileName = options.identity.split(separator: "/").last.map(String.init) ?? options.identity
        let name =
            options.name ?? card?.userID
            ?? (fileName.hasSuffix(".identity") ? String(fileName.dropLast(9)) : fileName)
        let ownList = card ?? contacts.lists[name]
        let device = try ownList.map { list throws(FilterError) in
            try self.ownDevice(in: list, deviceID: options.deviceID, card: options.card ?? options.contacts)
        }
        return FilterAccount(
            lockedName: name,
            deviceKeyIDs: Set(device?.deviceKeys.map(\.keyID) ?? []),
            contacts: contacts,
            userID: ownList?.userID,
            ownList: ownList,
            ownDevice: device
        )
    }

    private static func unlockedAccount(
        _ identity: Identity,
        contacts: ContactBook,
        card: DeviceList?,
        _ options: FilterAppOptions.Account,
        logger: Logger
    ) throws -> FilterAccount {
        if let deviceID = options.deviceID, deviceID != identity.deviceID {
            throw FilterError(
                "--device-id \(deviceID) does not match the identity \(options.identity), which is device "
                    + "\(identity.deviceID): leave --device-id out, or pass this device's identity"
            )
        }
        var ownList = card
        if let list = card {
            guard list.userID == identity.userID else {
                throw FilterError(
                    "--card \(options.card ?? "") is \(list.userID)'s device list, but the identity is "
                        + "\(identity.userID)'s: pass this user's own device list"
                )
            }
            guard list.device(named: identity.deviceID)?.signingKey == identity.signingKey.publicKey else {
                throw FilterError(
                    "--card \(options.card ?? "") (\(list.userID)'s device list, version \(list.listVersion), devices "
                        + "\(list.devices.map(\.deviceID).joined(separator: ", "))) does not list this device "
                        + "\(identity.deviceID) with its signing key: sign this device in and pass the new list"
                )
            }
        } else if let list = contacts.lists[identity.userID] {
            if list.device(named: identity.deviceID)?.signingKey == identity.signingKey.publicKey {
                ownList = list
            } else {
                logger.warning(
                    "the contacts' device list of this user does not list this device: the user's other devices are accepted, but update the list (device add) so they can reach this one",
                    metadata: ["device": "\(identity.deviceID)", "listVersion": "\(list.listVersion)"]
                )
            }
        }
        return FilterAccount(name: options.name, identity: identity, contacts: contacts, ownList: ownList)
    }

    /// This device's entry of the own list while locked: `--device-id`, or the only device.
    private static func ownDevice(
        in list: DeviceList,
        deviceID: String?,
        card: String
    ) throws(FilterError) -> DeviceList.Device {
        let names = list.devices.map(\.deviceID).joined(separator: ", ")
        if let deviceID {
            guard let device = list.device(named: deviceID) else {
                throw FilterError(
                    "--device-id \(deviceID): \(card) (\(list.userID)'s device list) has no such device "
                        + "(devices: \(names)); pass one of them"
                )
            }
            return device
        }
        guard list.devices.count == 1 else {
            throw FilterError(
                "the identity is locked and \(card) lists \(list.devices.count) devices of \(list.userID) "
                    + "(\(names)): pass --device-id to say which one this device is"
            )
        }
        return list.devices[0]
    }

    /// Every valid `*.card.json` in a folder: `<user id>.card.json` holds that user's device list.
    ///
    /// A card that cannot be read or is invalid (a key id that does not match its key, bad JSON, another user's list
    /// under this file name...) is refused on its own: logged once as an error (its path and what is wrong, never key bytes) and left out, so the other
    /// contacts keep working and the refused card's sender is an unknown sender.
    ///
    /// - Throws: ``FilterError`` when the folder itself cannot be read.
    public static func loadContacts(folder: String, logger: Logger) throws -> ContactBook {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder)
        } catch {
            throw FilterError("cannot read the contacts folder \(folder): check the path")
        }
        var book = ContactBook()
        for name in names.sorted() where name.hasSuffix(".card.json") {
            let path = folder + "/" + name
            do throws(E2EEError) {
                let list = try DeviceList.load(path: path)
                // `bob.card.json` is bob's card: another user's list in it is refused (docs/PROTOCOL.md §11.4 step
                // 4), so a swapped file can neither replace bob's list nor add a user under bob's name.
                try list.checkAddressed(to: String(name.dropLast(".card.json".count)), source: path)
                book.add(list)
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
