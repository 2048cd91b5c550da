public import E2EECore

/// Finds recipients' contact cards: `to` is a path to a card file (ending in `.json`), or a user id looked up as
/// `<folder>/<user id>.card.json`.
public struct ContactDirectory: Sendable {
    public let folder: String?

    public init(folder: String?) { self.folder = folder }

    /// The card for `to`. - Throws: `.unknownRecipient` (no such card) or `.unreadableCard` (invalid card).
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
            if error.message.contains("cannot read") {
                throw SenderError(.unknownRecipient, "no contact card for \"\(to)\" (looked for \(path))")
            }
            throw SenderError(.unreadableCard, error.message)
        }
    }
}
