import E2EECore
import Foundation
import PushTransport

/// The X-Wing side of the vectors. swift-crypto encapsulates X-Wing only with fresh randomness, so the byte-exact
/// X-Wing envelope vectors (Fixtures/e2ee-vectors-xwing.json) are sealed by the independent implementation
/// (`Tools/independent/xwing_vectors.py`) from the messages and lists of Fixtures/e2ee-vectors.json; this side opens
/// them (tests) and seals fresh ones for the independent implementation to open (``freshXWingPushes()``).
extension ProjectVectors {
    /// The positive messages the X-Wing vectors seal (every kind; the large text does not fit X-Wing's bucket).
    public static let xwingMessageNames = [
        "call-invite", "call-invite-group", "call-cancel", "text", "text-1k", "receipt",
    ]

    /// Pushes sealed now, with fresh randomness, to bob's X-Wing tablet key, as JSON
    /// (`{"pushes":[{"name":…,"body":…}]}`): `swift run e2ee-vectors fresh-xwing` prints it and
    /// `python3 Tools/independent/xwing_vectors.py open-fresh FILE` opens every one.
    public static func freshXWingPushes() -> [UInt8] {
        let keys = keys()
        let recipient = bobTabletXWing().currentDeviceKey.privateKey.publicKey
        let messages = Dictionary(uniqueKeysWithValues: messages(sender: keys.sender).map { ($0.name, $0.message) })
        let pushes: [[String: Any]] = xwingMessageNames.map { name in
            let sealed = try! PushPayload.seal(messages[name]!, to: recipient, signingKey: keys.sender.signingKey)
            return ["name": name, "body": sealed.apnsBodyString]
        }
        let data = try! JSONSerialization.data(
            withJSONObject: ["pushes": pushes],
            options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        )
        return Array(data) + [0x0A]
    }
}
