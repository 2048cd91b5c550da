import E2EECore
import Foundation
public import RelayClient
import SystemPackage

/// Reads delivery tokens: secret files of 64 hex digits (one trailing newline allowed), private to their owner.
public enum DeliveryTokenFile: Sendable {
    /// The file holding `userID`'s delivery token: `file` (`--delivery-token-file`), else
    /// `<contacts>/<user id>.delivery-token`; for the sender's own user (`own`), when the contacts folder has none,
    /// the file `relay tokens` writes by default: `<user id>.delivery-token` next to the identity.
    public static func path(
        for userID: String,
        file: String?,
        contacts: String?,
        own: (userID: String, path: String)? = nil
    ) throws(SenderError) -> String {
        if let file { return file }
        let inContacts = contacts.map { $0 + "/" + userID + ".delivery-token" }
        if let own, own.userID == userID, !(inContacts.map { FileManager.default.fileExists(atPath: $0) } ?? false) {
            return own.path
        }
        guard let contacts else {
            throw SenderError(
                .missingKey,
                "no delivery token for \(userID): pass --delivery-token-file FILE, or --contacts DIR holding "
                    + "\(userID).delivery-token (the token \(userID) handed you, mode 0600)"
            )
        }
        return contacts + "/" + userID + ".delivery-token"
    }

    /// Reads `userID`'s token from `path` (mode 0600, 64 hex digits, one trailing newline allowed).
    ///
    /// - Throws: `.insecureKey` for a file others may read, `.missingKey` for no file, `.usage` for a file that
    ///   does not hold a token.
    public static func read(path: String, userID: String) throws(SenderError) -> DeliveryToken {
        let text: String
        do throws(E2EEError) {
            let bytes = try SecretFile.readPassphrase(path: path)
            text = bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        } catch {
            if error.code == .insecureFile { throw SenderError(.insecureKey, error.message) }
            throw SenderError(
                .missingKey,
                "no delivery token for \(userID) in \(path): save the token \(userID) handed you there (64 hex "
                    + "digits, mode 0600)"
            )
        }
        guard let token = DeliveryToken(hex: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw SenderError(.usage, "\(path) does not hold a delivery token (64 hex digits)")
        }
        return token
    }

    /// Writes a new random token to `path` (mode 0600) and returns it.
    public static func create(path: String) throws(SenderError) -> DeliveryToken {
        let token = DeliveryToken()
        do {
            try SecretFile.write(path: path, bytes: SecureBytes(copying: Array((token.hex + "\n").utf8)))
        } catch {
            throw SenderError(.cannotCreate, "cannot write the delivery token file \(path): \(error.message)")
        }
        return token
    }

    /// The delivery tokens a run has read, by file: a file is read again only when it changed, so a batch does not
    /// open a secret file for every message, and a token rotated during a long batch is still used from its next
    /// message on.
    ///
    /// A file counts as unchanged when `stat` gives the same device, inode, size, mode, and modification and
    /// status-change times as before the last read. A rename over it (as `relay tokens` and every secret file
    /// write here do), an edit in place, or a `chmod` changes one of them. A file whose times are less than
    /// `settle` old is read every time: a write in the same tick of the file system's clock could leave its times
    /// as they were.
    struct Cache: Sendable {
        private struct FileVersion: Sendable, Equatable {
            var device: UInt64
            var inode: UInt64
            var size: Int64
            var mode: UInt32
            var modified: Duration
            var changed: Duration

            /// The file at `path` as `stat` sees it (following symbolic links, as the read does); nil when it
            /// cannot be seen.
            init?(path: String) {
                guard let info = try? Stat(FilePath(path)) else { return nil }
                self.device = UInt64(info.deviceID.rawValue)
                self.inode = UInt64(info.inode.rawValue)
                self.size = info.size
                self.mode = UInt32(info.mode.rawValue)
                self.modified = .seconds(info.st_mtim.tv_sec) + .nanoseconds(info.st_mtim.tv_nsec)
                self.changed = .seconds(info.st_ctim.tv_sec) + .nanoseconds(info.st_ctim.tv_nsec)
            }
        }

        private var entries: [String: (version: FileVersion, token: DeliveryToken)] = [:]
        private let settle: Duration
        /// How many times a file was read (tests).
        private(set) var reads = 0

        /// - Parameter settle: how old a file's times must be for its token to be kept (default 2 s).
        init(settle: Duration = .seconds(2)) {
            self.settle = settle
        }

        /// `userID`'s token from `path`: the one read before when the file did not change since, else read now
        /// with ``DeliveryTokenFile/read(path:userID:)``'s checks and refusals.
        mutating func token(path: String, userID: String) throws(SenderError) -> DeliveryToken {
            let version = FileVersion(path: path)
            if let version, let entry = self.entries[path], entry.version == version { return entry.token }
            self.entries[path] = nil
            self.reads += 1
            let token = try DeliveryTokenFile.read(path: path, userID: userID)
            // The version seen before the read: a change after it shows as a new version at the next message.
            let now = Duration.seconds(Date().timeIntervalSince1970)
            if let version, now - max(version.modified, version.changed) >= self.settle {
                self.entries[path] = (version, token)
            }
            return token
        }
    }
}
