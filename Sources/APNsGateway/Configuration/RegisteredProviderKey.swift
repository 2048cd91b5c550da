public import Crypto
import Foundation
public import PushTransport

/// A provider signing key the gateway accepts JWTs from: Apple's (team id, key id) pair with its P-256 public key.
///
/// Apple issues `.p8` keys per team; the key id is the JWT header's `kid` and the team id the `iss` claim. A key may
/// be limited to one environment (older sandbox-only or production-only keys); `nil` accepts it in both, like
/// Apple's current team keys.
public struct RegisteredProviderKey: Sendable {
    /// The 10-character team id (`iss`).
    public var teamID: String
    /// The 10-character key id (`kid`).
    public var keyID: String
    /// The public half of the team's signing key.
    public var publicKey: P256.Signing.PublicKey
    /// The environment the key is valid in; `nil` means both.
    public var environment: APNsEnvironment?

    /// Registers a key from its public key value.
    ///
    /// - Parameters:
    ///   - teamID: The team id the JWT's `iss` must carry.
    ///   - keyID: The key id the JWT header's `kid` must carry.
    ///   - publicKey: The P-256 public key that verifies the signature.
    ///   - environment: The environment the key is valid in; `nil` (default) for both.
    public init(
        teamID: String,
        keyID: String,
        publicKey: P256.Signing.PublicKey,
        environment: APNsEnvironment? = nil
    ) {
        self.teamID = teamID
        self.keyID = keyID
        self.publicKey = publicKey
        self.environment = environment
    }

    /// Registers a key from PEM text: a public key (`BEGIN PUBLIC KEY`) or a PKCS#8 private key (`.p8`).
    ///
    /// When a private key is given only its public half is kept.
    ///
    /// - Parameters:
    ///   - teamID: The team id the JWT's `iss` must carry.
    ///   - keyID: The key id the JWT header's `kid` must carry.
    ///   - pem: The PEM text.
    ///   - environment: The environment the key is valid in; `nil` (default) for both.
    /// - Throws: ``GatewayError/Code/invalidProviderKey`` when the text is no P-256 key.
    public init(
        teamID: String,
        keyID: String,
        pem: String,
        environment: APNsEnvironment? = nil
    ) throws(GatewayError) {
        let key: P256.Signing.PublicKey
        if let publicKey = try? P256.Signing.PublicKey(pemRepresentation: pem) {
            key = publicKey
        } else if let privateKey = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
            key = privateKey.publicKey
        } else {
            throw .invalidProviderKey(
                "the provider key for \(teamID)/\(keyID) is not a P-256 key in PEM: give the .p8 file or its public key"
            )
        }
        self.init(teamID: teamID, keyID: keyID, publicKey: key, environment: environment)
    }

    /// Registers a key from a PEM file (a public key or a `.p8` private key).
    ///
    /// - Parameters:
    ///   - teamID: The team id the JWT's `iss` must carry.
    ///   - keyID: The key id the JWT header's `kid` must carry.
    ///   - path: The PEM file.
    ///   - environment: The environment the key is valid in; `nil` (default) for both.
    /// - Throws: ``GatewayError/Code/invalidProviderKey`` when the file cannot be read or holds no P-256 key.
    public init(
        teamID: String,
        keyID: String,
        pemFile path: String,
        environment: APNsEnvironment? = nil
    ) throws(GatewayError) {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .invalidProviderKey("cannot read the provider key file \(path): check the path and permissions")
        }
        try self.init(teamID: teamID, keyID: keyID, pem: text, environment: environment)
    }
}
