import E2EECore
import Foundation
public import RelayClient

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
}
