import ArgumentParser
import E2EECore
import Foundation
import Sender

struct Keygen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create an identity (secret, 0600) and its public contact card."
    )

    @Option(name: .long, help: "The user id (1-64 bytes).") var userID: String
    @Option(name: .long, help: "The name others see.") var displayName: String?
    @Option(name: .long, help: "Where to write <user id>.identity and <user id>.card.json.") var outDir: String
    @Option(name: .long, help: "This device's APNs token (hex), published in the card.") var deviceToken: String?
    @OptionGroup var topic: CardTopicOption
    @Option(name: .long, help: "Lock the identity with the passphrase in this file.") var passphraseFile: String?
    @Flag(name: .long, help: "Overwrite an existing identity.") var force = false

    func run() async throws {
        try await runCLI {
            let identityPath = self.outDir + "/" + self.userID + ".identity"
            if !self.force && FileManager.default.fileExists(atPath: identityPath) {
                throw SenderError(.usage, "\(identityPath) exists; pass --force to replace it (the old keys are lost)")
            }
            var push: DeviceList.Push? = nil
            if let token = self.deviceToken {
                push = DeviceList.Push(
                    deviceToken: try PushBuilder.validateDeviceToken(token),
                    topic: self.topic.value
                )
            }
            let passphrase = try IdentityOptions(identity: nil, passphraseFile: self.passphraseFile).passphrase()
            try FileManager.default.createDirectory(atPath: self.outDir, withIntermediateDirectories: true)
            let identity = try Identity.generate(
                userID: self.userID,
                displayName: self.displayName ?? self.userID,
                nowMs: PushBuilder.systemNowMs()
            )
            try identity.save(path: identityPath, passphrase: passphrase)
            let cardPath = self.outDir + "/" + self.userID + ".card.json"
            try SecretFile.writePublic(
                path: cardPath,
                bytes: DeviceList.create(for: identity, push: push, nowMs: PushBuilder.systemNowMs()).jsonData()
            )
            note("wrote \(identityPath) (secret, mode 0600) and \(cardPath) (public)")
            try printLine(cardPath)
        }
    }
}

extension IdentityOptions {
    init(identity: String?, passphraseFile: String?) {
        self.init()
        self.identity = identity
        self.passphraseFile = passphraseFile
    }
}

struct Card: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the public contact card of an identity.")
    @OptionGroup var identity: IdentityOptions
    @Option(name: .long, help: "This device's APNs token (hex) to publish.") var deviceToken: String?
    @OptionGroup var topic: CardTopicOption

    func run() async throws {
        try await runCLI {
            let id = try self.identity.load()
            var push: DeviceList.Push? = nil
            if let token = self.deviceToken {
                push = DeviceList.Push(
                    deviceToken: try PushBuilder.validateDeviceToken(token),
                    topic: self.topic.value
                )
            }
            try StandardOutput.write(
                DeviceList.create(for: id, push: push, nowMs: PushBuilder.systemNowMs()).jsonData()
            )
        }
    }
}

struct Rotate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add a new device key; older keys keep opening pushes for the grace period. Prints the new card."
    )
    @OptionGroup var identity: IdentityOptions
    @Option(
        name: .long,
        help: """
            The current card, whose public fields (push address) the new card keeps. Default: --card-out if it \
            exists, else <user id>.card.json next to the identity, as keygen writes it.
            """
    ) var card: String?
    @Option(name: .long, help: "Also write the new card to this file.") var cardOut: String?
    @Option(name: .long, help: "Grace period of the previous key, in hours.") var graceHours: Int = 168

    func run() async throws {
        try await runCLI {
            var id = try self.identity.load()
            guard let identityPath = self.identity.identityPath else {
                throw SenderError(.missingKey, "no identity: pass --identity FILE or set E2EE_IDENTITY_FILE")
            }
            let previous = try self.currentCard(identityPath: identityPath, userID: id.userID)
            let old = id.currentDeviceKey.keyID
            let new = id.rotate(nowMs: PushBuilder.systemNowMs(), gracePeriodMs: UInt64(self.graceHours) * 3_600_000)
            try id.save(path: identityPath, passphrase: try self.identity.passphrase())
            let now = PushBuilder.systemNowMs()
            let card =
                try previous?.updatingKeys(of: id, nowMs: now) ?? DeviceList.create(for: id, push: nil, nowMs: now)
            if let out = self.cardOut { try SecretFile.writePublic(path: out, bytes: card.jsonData()) }
            note("rotated device key \(old) -> \(new.keyID); the old key opens pushes for \(self.graceHours) h")
            if previous?.devices.contains(where: { $0.push != nil }) != true {
                note("e2ee-send: warning: no current card with a push address was found; the new card has none")
            }
            try StandardOutput.write(card.jsonData())
        }
    }

    /// The card whose public fields the rotated card keeps: `--card`, else `--card-out` if it exists, else the card
    /// keygen wrote next to the identity. A named `--card` that cannot be read is an error; a default that does not
    /// exist is not.
    func currentCard(identityPath: String, userID: String) throws(SenderError) -> DeviceList? {
        if let path = self.card {
            do {
                return try DeviceList.load(path: path)
            } catch {
                throw SenderError(.unreadableCard, "cannot read --card \(path): \(error.message)")
            }
        }
        let folder = (identityPath as NSString).deletingLastPathComponent
        let sibling = (folder.isEmpty ? "." : folder) + "/" + userID + ".card.json"
        for path in [self.cardOut, sibling].compactMap({ $0 }) where FileManager.default.fileExists(atPath: path) {
            do {
                return try DeviceList.load(path: path)
            } catch {
                throw SenderError(.unreadableCard, "cannot read the current card \(path): \(error.message)")
            }
        }
        return nil
    }
}
