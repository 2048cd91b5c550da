public import ArgumentParser
import Foundation
public import Sender

/// The APNs provider's options, declared once for every tool that delivers to APNs (`e2ee-send --deliver` and
/// `deliver`, `e2ee-relay serve`): the `.p8` key, its key id and team id, Apple's environment or a custom
/// APNs-compatible server (the local gateway) and the CA to trust for it. Each option also comes from the
/// environment where a secret's path or an account id belongs there (`APNS_KEY_PATH`, `APNS_KEY_ID`,
/// `APNS_TEAM_ID`).
///
/// A separate small target from CLISupport so that the tools that never talk to APNs (`e2ee-filter`) do not link
/// the APNs client.
public struct APNsOptions: ParsableArguments, Sendable {
    @Option(name: .long, help: "The APNs .p8 key file (mode 0600). Default: the file $APNS_KEY_PATH names.")
    public var apnsKeyFile: String?

    @Option(name: .long, help: "The .p8 key's 10-character key id (kid). Default: $APNS_KEY_ID.")
    public var apnsKeyID: String?

    @Option(name: .long, help: "The 10-character team id (iss). Default: $APNS_TEAM_ID.")
    public var apnsTeamID: String?

    @Option(
        name: .long,
        help: """
            Apple's APNs environment the device tokens belong to: development (e2ee-send's default) or production; \
            ignored with --apns-url. A server delivering to both gives it twice.
            """
    )
    public var apnsEnvironment: [APNsEnvironment] = []

    @Option(name: .long, help: "A custom APNs-compatible endpoint, e.g. https://127.0.0.1:8443 (the local gateway).")
    public var apnsURL: String?

    @Option(name: .long, help: "A PEM CA file to trust for --apns-url (e.g. the gateway's ca.pem).")
    public var apnsCA: String?

    public init() {}

    /// The `.p8` key: `--apns-key-file`, else the file `$APNS_KEY_PATH` names.
    public func signingKey() throws(SenderError) -> APNsSigningKey {
        if let file = self.apnsKeyFile { return try APNsSigningKey.load(path: file) }
        return try APNsSigningKey.load()
    }

    /// The key id and team id: the flags, else `$APNS_KEY_ID` and `$APNS_TEAM_ID`.
    ///
    /// - Parameters:
    ///   - purpose: what needs them, for the message (`--deliver`).
    ///   - environment: the variables to read; default: this process's.
    /// - Throws: `.usage` naming the flags and variables when either is missing.
    public func credentials(
        for purpose: String,
        environment: [String: String]? = nil
    ) throws(SenderError) -> (keyID: String, teamID: String) {
        let environment = environment ?? ProcessInfo.processInfo.environment
        guard let keyID = self.apnsKeyID ?? environment["APNS_KEY_ID"],
            let teamID = self.apnsTeamID ?? environment["APNS_TEAM_ID"]
        else {
            throw SenderError(
                .usage,
                "\(purpose) needs --apns-key-id and --apns-team-id (or APNS_KEY_ID, APNS_TEAM_ID)"
            )
        }
        return (keyID, teamID)
    }

    /// Where pushes go: `--apns-url` (one custom server for every environment), else each `--apns-environment`,
    /// else `defaults`; each with the environments it serves.
    public func endpoints(default defaults: [APNsEnvironment]) -> [(endpoint: APNsEndpoint, serves: [APNsEnvironment])]
    {
        if let url = self.apnsURL {
            return [(.custom(baseURL: url, trustedCAPEMPath: self.apnsCA), APNsEnvironment.allCases)]
        }
        let chosen = self.apnsEnvironment.isEmpty ? defaults : self.apnsEnvironment
        var seen = Set<APNsEnvironment>()
        return chosen.filter { seen.insert($0).inserted }.map { (.apple($0), [$0]) }
    }
}

extension APNsEnvironment: ExpressibleByArgument {}
