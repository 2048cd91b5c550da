public import E2EECore
import Locking
public import Logging
import SystemPackage

/// Unlocks locked accounts from their passphrase files, polled by the daemon's ticker.
///
/// Argon2id runs once per version of a passphrase file: a file that failed (wrong passphrase, mode open to others,
/// unreadable) is reported once, with its path, what is wrong and what to do, and is not tried again until it
/// changes (device, inode, size or modification time). A missing file is reported once and waited for. The
/// passphrase itself is never logged.
public final class PassphraseUnlocker: Sendable {
    /// One locked account: its identity file and the passphrase file that unlocks it.
    public struct Account: Sendable, Hashable {
        public var identity: String
        public var passphraseFile: String?

        public init(identity: String, passphraseFile: String?) {
            self.identity = identity
            self.passphraseFile = passphraseFile
        }
    }

    /// What identifies one version of a file without reading it.
    struct FileVersion: Sendable, Hashable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int
    }

    private struct AccountState: Sendable {
        /// The version of the passphrase file that last failed: not tried again until the file changes.
        var failed: FileVersion?
        var reportedMissing = false
    }

    private struct State: ~Copyable {
        var accounts: [String: AccountState] = [:]
        var attempts = 0
    }

    private let accounts: [String: Account]
    private let logger: Logger
    private let load: @Sendable (_ identity: String, _ passphraseFile: String) throws(E2EEError) -> Identity
    private let state = PThreadMutex(State())

    /// - Parameters:
    ///   - accounts: the accounts by name.
    ///   - load: reads the passphrase file and opens the identity (Argon2id); injectable for tests.
    public init(
        accounts: [String: Account],
        logger: Logger,
        load: @escaping @Sendable (_ identity: String, _ passphraseFile: String) throws(E2EEError) -> Identity =
            PassphraseUnlocker.loadIdentity
    ) {
        self.accounts = accounts
        self.logger = logger
        self.load = load
    }

    /// Reads `passphraseFile` and opens the identity file with it.
    public static func loadIdentity(identity: String, passphraseFile: String) throws(E2EEError) -> Identity {
        let passphrase = try SecretFile.readPassphrase(path: passphraseFile)
        return try Identity.load(path: identity, passphrase: passphrase)
    }

    /// How many times a passphrase file was tried (each an Argon2id run, or a read that failed before it).
    public var attempts: Int { self.state.withLock { $0.attempts } }

    /// The identity of account `name` if its passphrase file opens it now, else nil (still locked).
    public func unlock(_ name: String) -> Identity? {
        guard let account = self.accounts[name], let file = account.passphraseFile else { return nil }
        guard let version = Self.version(of: file) else {
            let first = self.state.withLock { state in
                defer { state.accounts[name, default: AccountState()].reportedMissing = true }
                return !state.accounts[name, default: AccountState()].reportedMissing
            }
            if first {
                self.logger.notice(
                    "account locked: waiting for its passphrase file; payloads are kept until it appears",
                    metadata: ["account": "\(name)", "passphrase_file": "\(file)"]
                )
            }
            return nil
        }
        let unchanged = self.state.withLock { state in
            state.accounts[name, default: AccountState()].reportedMissing = false
            if state.accounts[name]?.failed == version { return true }
            state.attempts += 1
            return false
        }
        if unchanged { return nil }
        do {
            let identity = try self.load(account.identity, file)
            self.state.withLock { $0.accounts[name] = nil }
            return identity
        } catch {
            self.state.withLock { $0.accounts[name, default: AccountState()].failed = version }
            // E2EEError messages name files and problems, never key bytes or passphrases.
            self.logger.error(
                "account stays locked: \(Self.problem(error)) (\(error.message)); fix the passphrase file, it is tried again when it changes",
                metadata: ["account": "\(name)", "passphrase_file": "\(file)", "identity": "\(account.identity)"]
            )
            return nil
        }
    }

    private static func problem(_ error: E2EEError) -> String {
        switch error.code {
        case .insecureFile: "the passphrase file or identity file is open to group or others (chmod 600)"
        case .keyFile: "the passphrase file or identity file cannot be read"
        default: "the passphrase in the file does not open the identity (wrong passphrase?)"
        }
    }

    static func version(of path: String) -> FileVersion? {
        guard let info = try? Stat(FilePath(path)) else { return nil }
        let modified = info.st_mtim
        return FileVersion(
            device: UInt64(info.deviceID.rawValue),
            inode: UInt64(info.inode.rawValue),
            size: info.size,
            modifiedSeconds: Int(modified.tv_sec),
            modifiedNanoseconds: Int(modified.tv_nsec)
        )
    }
}
