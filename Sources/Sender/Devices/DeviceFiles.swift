public import E2EECore
import Foundation

/// Where a device's files are and how they are read and written: the identity (secret, 0600), the user's current
/// card (the signed device list, public), a device request, a delivery token. What `e2ee-send keygen`, `device …`,
/// `card`, `rotate` and `relay …` share, as functions a test calls in-process.
public enum DeviceFiles: Sendable {
    /// `<user id><suffix>` next to the identity file: the card keygen writes (`.card.json`), the delivery token
    /// `relay tokens` writes by default (`.delivery-token`).
    public static func sibling(of identityPath: String, userID: String, suffix: String) -> String {
        let folder = (identityPath as NSString).deletingLastPathComponent
        return (folder.isEmpty ? "." : folder) + "/" + userID + suffix
    }

    /// Reads one's own current list (a card file), verified.
    ///
    /// - Parameters:
    ///   - path: the card file.
    ///   - flag: the flag that named it, for messages (`--card`).
    /// - Throws: `.unknownRecipient` for no file, `.unreadableCard` for a file that cannot be read,
    ///   `.malformedList` for one that is not a well-formed list, a list refusal for one that does not verify.
    public static func loadOwnList(_ path: String, flag: String = "--card") throws(SenderError) -> DeviceList {
        guard FileManager.default.fileExists(atPath: path) else {
            throw SenderError(.unknownRecipient, "no device list at \(path): pass \(flag) with your current card")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw SenderError(.unreadableCard, "cannot read \(flag) \(path): check its permissions")
        }
        do {
            return try DeviceList.load(path: path)
        } catch {
            if error.code == .keyFile || error.code == .invalidKey {
                throw SenderError(
                    .malformedList,
                    "cannot use \(flag) \(path): it is not a well-formed device list (key-file): \(error.message)"
                )
            }
            throw SenderError(error, context: "cannot use \(flag) \(path)")
        }
    }

    /// Writes public bytes (a card, a device request) atomically, mode 0644.
    ///
    /// - Throws: `.cannotCreate` naming the file.
    public static func writePublic(_ bytes: [UInt8], to path: String) throws(SenderError) {
        do {
            try SecretFile.writePublic(path: path, bytes: bytes)
        } catch {
            throw SenderError(.cannotCreate, "cannot write \(path): \(error.message)")
        }
    }

    /// An APNs push address from a device token (checked by ``DeviceToken``) and the app's bundle id; nil without a
    /// token.
    ///
    /// - Throws: `.badDeviceToken` naming the rule the token breaks, `.usage` for a topic that is not a bundle id
    ///   (1-255 bytes, printable ASCII without spaces or '/').
    public static func push(token: String?, topic: String) throws(SenderError) -> PushAddress? {
        guard let token else { return nil }
        let address = PushAddress(APNsAddress(topic: topic, deviceToken: try PushBuilder.validateDeviceToken(token)))
        if let problem = address.problem { throw SenderError(.usage, "--topic \(topic): \(problem)") }
        return address
    }

    /// A push address of any service from `<service>:<address>` (`--push-address`), checked by
    /// `PushAddress.problem` (an APNs address also by its own rule) and with an APNs token in lower case, the form it
    /// is compared and sent in.
    ///
    /// - Throws: `.usage` naming what is wrong with it.
    public static func push(address text: String) throws(SenderError) -> PushAddress {
        guard let colon = text.firstIndex(of: ":") else {
            throw SenderError(
                .usage,
                "--push-address \(text): give <service>:<address>, e.g. apns:com.example.app/<device token>"
            )
        }
        let given = PushAddress(
            service: PushService(rawValue: String(text[..<colon])),
            address: String(text[text.index(after: colon)...])
        )
        return try Self.checked(given, naming: "--push-address \(text)")
    }

    /// `address` checked by `PushAddress.problem`, with an APNs token in lower case; any other address as given.
    ///
    /// - Throws: `.badDeviceToken` for an APNs token that breaks ``DeviceToken``'s rule, `.usage` for anything
    ///   else wrong, each after `naming`.
    public static func checked(_ address: PushAddress, naming: String) throws(SenderError) -> PushAddress {
        if address.service == .apns, let slash = address.address.lastIndex(of: "/"),
            let problem = DeviceToken.problem(address.address[address.address.index(after: slash)...])
        {
            throw SenderError(.badDeviceToken, "\(naming): \(problem)")
        }
        if let problem = address.problem { throw SenderError(.usage, "\(naming): \(problem)") }
        guard let apns = address.apns else { return address }
        return PushAddress(APNsAddress(topic: apns.topic, deviceToken: apns.deviceToken.lowercased()))
    }

    /// The passphrase in `file` (a secret file: mode 0600, one trailing newline dropped); nil without a file.
    ///
    /// - Throws: E2EECore's codes as sender codes (`.insecureKey` for a file others may read, `.missingKey`).
    public static func passphrase(file: String?) throws(SenderError) -> SecureBytes? {
        guard let file else { return nil }
        do {
            return try SecretFile.readPassphrase(path: file)
        } catch {
            throw SenderError(error, context: "cannot read the passphrase file")
        }
    }

    /// Creates `folder` and its parents.
    ///
    /// - Throws: `.cannotCreate` naming the folder and the system's reason.
    static func createFolder(_ folder: String) throws(SenderError) {
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            let path = ((error as? CocoaError)?.userInfo[NSFilePathErrorKey] as? String).map { " \($0)" } ?? ""
            throw SenderError(
                .cannotCreate,
                "cannot create\(path): \(error.localizedDescription); check the path and rights"
            )
        }
    }
}
