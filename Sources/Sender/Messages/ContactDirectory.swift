public import E2EECore
import Foundation

/// Finds recipients' contact cards (signed device lists, docs/PROTOCOL.md §11): `to` is a path to a card file
/// (ending in `.json`), or a user id looked up as `<folder>/<user id>.card.json`.
///
/// A card is returned only when its certificates and signature verify (§11.4); whether its user key is the one to
/// trust is decided by ``ContactTrust`` against the pins.
public struct ContactDirectory: Sendable {
    public let folder: String?

    public init(folder: String?) { self.folder = folder }

    /// The verified card for `to`.
    ///
    /// A user id is looked up as `<folder>/<user id>.card.json`, and the list found must be that user's
    /// (docs/PROTOCOL.md §11.4 step 4): a valid list of another user in that file is refused (`user-id-mismatch`),
    /// never pinned or sealed to in bob's place. A card file path names no user: its list is the user addressed.
    ///
    /// - Throws: `.unknownRecipient` (no such card), `.malformedList` (not a well-formed device list),
    ///   `.deviceNotSignedIn` (a device without a valid certificate: an injected device), `.badListSignature`
    ///   (the list was altered or forged) or `.userIDMismatch` (another user's list in this user's card file).
    public func card(for to: String) throws(SenderError) -> DeviceList {
        let path: String
        let addressed: String?
        if to.hasSuffix(".json") {
            path = to
            addressed = nil
        } else {
            guard let folder = self.folder else {
                throw SenderError(
                    .unknownRecipient,
                    "\"\(to)\" is not a card file; pass --contacts DIR holding \(to).card.json, or a path ending in .json"
                )
            }
            guard to.utf8.allSatisfy({ $0 != UInt8(ascii: "/") }), !to.hasPrefix(".") else {
                throw SenderError(.unknownRecipient, "\"\(to)\" is not a valid user id")
            }
            path = folder + "/" + to + ".card.json"
            addressed = to
        }
        guard FileManager.default.fileExists(atPath: path) else {
            throw SenderError(.unknownRecipient, "no contact card for \"\(to)\" (looked for \(path))")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw SenderError(.unreadableCard, "cannot read the card \(path): check its permissions")
        }
        do throws(E2EEError) {
            let list = try DeviceList.load(path: path)
            if let addressed { try list.checkAddressed(to: addressed, source: path) }
            return list
        } catch {
            throw Self.refusal(error, of: to)
        }
    }

    /// Keeps `<folder>/<user id>.card.json` in step with a list accepted from elsewhere (a relay's): written,
    /// atomically, when the folder holds no card of that user or an older version. The pins move to every list
    /// accepted; a card left behind would be refused as `list-rollback` by the next send that reads it (offline,
    /// `--deliver`), and the device's filter, which reads the same folder, would not know the new devices.
    ///
    /// - Returns: the path written, or nil when nothing was written (no folder, or the card there is as new).
    /// - Throws: `.cannotCreate` when the card cannot be written.
    @discardableResult
    public func keep(_ list: DeviceList) throws(SenderError) -> String? {
        guard let folder = self.folder else { return nil }
        let path = folder + "/" + list.userID + ".card.json"
        if let current = try? DeviceList.load(path: path), current.userID == list.userID,
            current.listVersion >= list.listVersion
        {
            return nil
        }
        do {
            try SecretFile.writePublic(path: path, bytes: list.jsonData())
        } catch {
            throw SenderError(.cannotCreate, "cannot write \(path): \(error.message); check the folder's rights")
        }
        return path
    }

    /// The sender's error for a list that `E2EECore` refused, saying what to do (exit 65 for a list that is not
    /// well formed, 76 for one that does not verify or is another user's), whichever source the list came from.
    ///
    /// - Parameters:
    ///   - error: the refusal (`key-file`, `device-not-signed-in`, `bad-list-signature`, `user-id-mismatch`).
    ///   - to: the user (or card file) addressed.
    ///   - source: where the list came from, for the message: `the card`, `the relay's list`.
    public static func refusal(_ error: E2EEError, of to: String, source: String = "the card") -> SenderError {
        switch error.code {
        case .deviceNotSignedIn:
            return SenderError(
                .deviceNotSignedIn,
                "refused \(source) for \"\(to)\": \(error.message). Nothing was sent: get a fresh card from \(to) "
                    + "and tell them (whoever served this one may be listening in)"
            )
        case .badListSignature:
            return SenderError(
                .badListSignature,
                "refused \(source) for \"\(to)\": \(error.message). Nothing was sent: get a fresh card from \(to)"
            )
        case .userIDMismatch:
            return SenderError(
                .userIDMismatch,
                "refused \(source) for \"\(to)\": \(error.message). Nothing was sent (whoever put it there may be "
                    + "listening in)"
            )
        case .keyFile, .invalidKey:
            return SenderError(
                .malformedList,
                "refused \(source) for \"\(to)\": it is not a well-formed device list (key-file): \(error.message). "
                    + "Nothing was sent: get a fresh card from \(to)"
            )
        default:
            return SenderError(error, context: "refused \(source) for \"\(to)\"")
        }
    }
}
