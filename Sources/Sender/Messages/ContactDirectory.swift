public import E2EECore

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
    /// - Throws: `.unknownRecipient` (no such card), `.unreadableCard` (not a well-formed card),
    ///   `.deviceNotSignedIn` (a device without a valid certificate: an injected device) or `.badListSignature`
    ///   (the list was altered or forged).
    public func card(for to: String) throws(SenderError) -> DeviceList {
        let path: String
        if to.hasSuffix(".json") {
            path = to
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
        }
        do {
            return try DeviceList.load(path: path)
        } catch {
            switch error.code {
            case .deviceNotSignedIn:
                throw SenderError(
                    .deviceNotSignedIn,
                    "refused the card for \"\(to)\": \(error.message). Nothing was sent: get a fresh card from "
                        + "\(to) and tell them (whoever served this one may be listening in)"
                )
            case .badListSignature:
                throw SenderError(
                    .badListSignature,
                    "refused the card for \"\(to)\": \(error.message). Nothing was sent: get a fresh card from "
                        + "\(to)"
                )
            default:
                if error.message.contains("cannot read") {
                    throw SenderError(.unknownRecipient, "no contact card for \"\(to)\" (looked for \(path))")
                }
                throw SenderError(.unreadableCard, error.message)
            }
        }
    }
}
