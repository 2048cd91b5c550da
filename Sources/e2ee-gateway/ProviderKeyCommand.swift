import APNsGateway
import ArgumentParser
import Foundation

/// `e2ee-gateway provider-key`: makes an APNs-style P-256 key pair for demos and tests.
struct ProviderKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provider-key",
        abstract: "Make AuthKey_<KEYID>.p8 (0600) and AuthKey_<KEYID>.pub.pem for a demo provider key.",
        discussion: """
            Prints one JSON line with the paths on stdout. Real deployments use the .p8 Apple issues.
            \(GatewayCommand.exitCodes)
            """
    )

    @Option(name: .customLong("team-id"), help: "The team id (JWT iss), e.g. TEAM123456.")
    var teamID: String

    @Option(name: .customLong("key-id"), help: "The key id (JWT kid), letters and digits, e.g. KEY1234567.")
    var keyID: String

    @Option(name: .customLong("out-dir"), help: "The directory to write the two files into (created if needed).")
    var outDir: String

    func validate() throws {
        guard !self.teamID.isEmpty, self.teamID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw ValidationError("--team-id must be letters and digits (Apple's team ids are 10 characters)")
        }
        guard !self.keyID.isEmpty, self.keyID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw ValidationError("--key-id must be letters and digits (Apple's key ids are 10 characters)")
        }
    }

    func run() async throws {
        do {
            let paths = try ProviderKeyFiles.generate(keyID: self.keyID, in: self.outDir)
            print(
                #"{"key_id":"\#(self.keyID)","private_key":"\#(paths.privateKey)","public_key":"\#(paths.publicKey)","team_id":"\#(self.teamID)"}"#
            )
            Diagnostics.say(
                "wrote \(paths.privateKey) (0600) and \(paths.publicKey); "
                    + "register it with --provider-key \(self.teamID):\(self.keyID):\(paths.publicKey)"
            )
        } catch {
            Diagnostics.say("error: \(error.message)")
            throw GatewayExit.cannotCreate
        }
    }
}

/// Human messages go to stderr; stdout carries machine output only.
enum Diagnostics {
    static func say(_ message: String) {
        FileHandle.standardError.write(Data("e2ee-gateway: \(message)\n".utf8))
    }
}
