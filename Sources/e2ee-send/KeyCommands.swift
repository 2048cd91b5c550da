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
    @Option(name: .long, help: "The app's bundle id, published in the card with the token.") var topic: String =
        "com.example.e2ee"
    @Option(name: .long, help: "Lock the identity with the passphrase in this file.") var passphraseFile: String?
    @Flag(name: .long, help: "Overwrite an existing identity.") var force = false

    func run() async throws {
        try await runCLI {
            let identityPath = self.outDir + "/" + self.userID + ".identity"
            if !self.force && FileManager.default.fileExists(atPath: identityPath) {
                throw SenderError(.usage, "\(identityPath) exists; pass --force to replace it (the old keys are lost)")
            }
            var push: ContactCard.Push? = nil
            if let token = self.deviceToken {
                push = ContactCard.Push(deviceToken: try PushBuilder.validateDeviceToken(token), topic: self.topic)
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
            try SecretFile.writePublic(path: cardPath, bytes: identity.card(push: push).jsonData())
            note("wrote \(identityPath) (secret, mode 0600) and \(cardPath) (public)")
            printLine(cardPath)
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
    @Option(name: .long, help: "The app's bundle id to publish with the token.") var topic: String = "com.example.e2ee"

    func run() async throws {
        do {
            let id = try self.identity.load()
            var push: ContactCard.Push? = nil
            if let token = self.deviceToken {
                push = ContactCard.Push(deviceToken: try PushBuilder.validateDeviceToken(token), topic: self.topic)
            }
            FileHandle.standardOutput.write(Data(id.card(push: push).jsonData()))
        }
    }
}

struct Rotate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add a new device key; older keys keep opening pushes for the grace period. Prints the new card."
    )
    @OptionGroup var identity: IdentityOptions
    @Option(name: .long, help: "Also write the new card to this file.") var cardOut: String?
    @Option(name: .long, help: "Grace period of the previous key, in hours.") var graceHours: Int = 168

    func run() async throws {
        try await runCLI {
            var id = try self.identity.load()
            let old = id.currentDeviceKey.keyID
            let previous = self.cardOut.flatMap { try? ContactCard.load(path: $0) }
            let new = id.rotate(nowMs: PushBuilder.systemNowMs(), gracePeriodMs: UInt64(self.graceHours) * 3_600_000)
            try id.save(path: self.identity.identityPath!, passphrase: try self.identity.passphrase())
            let card = id.card(push: previous?.push)
            if let out = self.cardOut { try SecretFile.writePublic(path: out, bytes: card.jsonData()) }
            note("rotated device key \(old) -> \(new.keyID); the old key opens pushes for \(self.graceHours) h")
            FileHandle.standardOutput.write(Data(card.jsonData()))
        }
    }
}
