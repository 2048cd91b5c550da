public import E2EECore
import Locking
public import Logging

/// Notices that an account's identity file changed under a running filter (a key rotation:
/// `e2ee-send rotate` writes the new device key into it) and reads the new version, so pushes sealed to the new key
/// open without a restart.
///
/// The daemon asks before deciding each batch (one `stat` per account) and on each tick. A new version of the file
/// (device, inode, size or modification time) is read whole; a file that cannot be read or opened as it is now
/// (half written by a tool that does not write atomically, a passphrase that no longer opens it) is reported once
/// per version and the identity in use is kept, so no payload is decided without keys. `e2ee-send` writes
/// identities atomically (a new file renamed over the old), so a reader sees the old file or the new one.
public final class IdentityFileWatcher: Sendable {
    /// One account's identity file and how to open it.
    public struct Account: Sendable, Hashable {
        public var name: String
        public var identity: String
        public var passphraseFile: String?

        public init(name: String, identity: String, passphraseFile: String?) {
            self.name = name
            self.identity = identity
            self.passphraseFile = passphraseFile
        }
    }

    private let accounts: [Account]
    private let logger: Logger
    /// The version of each account's file last read (or refused), by account name.
    private let seen: PThreadMutex<[String: PassphraseUnlocker.FileVersion]>

    /// Takes the files' versions now, as the versions the accounts were loaded from.
    public init(accounts: [Account], logger: Logger) {
        self.accounts = accounts
        self.logger = logger
        var seen: [String: PassphraseUnlocker.FileVersion] = [:]
        for account in accounts {
            if let version = PassphraseUnlocker.version(of: account.identity) { seen[account.name] = version }
        }
        self.seen = PThreadMutex(seen)
    }

    /// The identities whose files changed since they were last read, read now (name, identity); an account whose
    /// new file cannot be used is left out (and reported once).
    public func changed() -> [(name: String, identity: Identity)] {
        var out: [(name: String, identity: Identity)] = []
        for account in self.accounts {
            guard let version = PassphraseUnlocker.version(of: account.identity) else { continue }
            let isNew = self.seen.withLock { seen in
                guard seen[account.name] != version else { return false }
                seen[account.name] = version
                return true
            }
            guard isNew else { continue }
            do throws(E2EEError) {
                let identity =
                    if let file = account.passphraseFile {
                        try PassphraseUnlocker.loadIdentity(identity: account.identity, passphraseFile: file)
                    } else {
                        try Identity.load(path: account.identity)
                    }
                out.append((account.name, identity))
            } catch {
                // E2EEError messages name files and problems, never key bytes.
                self.logger.error(
                    "the identity file changed but cannot be used: \(error.message); the keys read before stay in use until it is fixed",
                    metadata: ["account": "\(account.name)", "identity": "\(account.identity)"]
                )
            }
        }
        return out
    }
}
