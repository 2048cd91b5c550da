public import Crypto
import E2EECore
public import Foundation

/// The team's APNs authentication key: a P-256 private key from Apple's `.p8` file (PKCS#8, PEM).
///
/// The key is read from a file that only its owner may read (mode `0600` or stricter), or from the file an
/// environment variable names; never from a command-line argument. Its `description` is `<redacted>`, so it cannot
/// leak through string interpolation or logging.
public struct APNsSigningKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The environment variable ``load(fromEnvironmentVariable:environment:)`` reads by default.
    public static let defaultEnvironmentVariable = "APNS_KEY_PATH"

    let privateKey: P256.Signing.PrivateKey

    /// Wraps a P-256 private key already in memory (tests, keys from a secret store).
    ///
    /// - Parameter privateKey: The signing key.
    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
    }

    /// Parses the PEM text of a `.p8` key (`-----BEGIN PRIVATE KEY-----`, PKCS#8).
    ///
    /// - Parameter pem: The PEM text.
    /// - Throws: ``SenderError/Code/keyInvalid`` when the text is not a PKCS#8 P-256 private key.
    public init(pemRepresentation pem: String) throws(SenderError) {
        do {
            self.privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw SenderError(
                .keyInvalid,
                "the key is not a PKCS#8 P-256 private key in PEM form; use the .p8 file Apple issued for APNs"
            )
        }
    }

    /// Loads a `.p8` key file, refusing it if its group or others may access it.
    ///
    /// - Parameter path: The key file.
    /// - Returns: The key.
    /// - Throws: ``SenderError/Code/keyFileUnreadable``, ``SenderError/Code/keyFileTooOpen`` (the message says
    ///   `chmod 600 <path>`), or ``SenderError/Code/keyInvalid``.
    public static func load(path: String) throws(SenderError) -> APNsSigningKey {
        let text: String?
        do throws(E2EEError) {
            // The one rule for secret files (E2EECore's SecretFile): a regular file, no permission for group or others.
            text = try SecretFile.read(path: path).withUnsafeBytes { String(validating: $0, as: UTF8.self) }
        } catch {
            if error.code == .insecureFile {
                throw SenderError(.keyFileTooOpen, "the APNs key file \(error.message)")
            }
            throw SenderError(.keyFileUnreadable, "cannot read the APNs key file: \(error.message)")
        }
        guard let text else {
            throw SenderError(.keyInvalid, "the APNs key file \(path) is not PEM text; use Apple's .p8 file")
        }
        do {
            return try APNsSigningKey(pemRepresentation: text)
        } catch {
            throw SenderError(.keyInvalid, "the APNs key file \(path) is not a PKCS#8 P-256 key; use Apple's .p8 file")
        }
    }

    /// Loads the `.p8` key file named by an environment variable.
    ///
    /// - Parameters:
    ///   - name: The variable holding the key file's path (default `APNS_KEY_PATH`).
    ///   - environment: The environment to read (default: this process's).
    /// - Returns: The key.
    /// - Throws: ``SenderError/Code/keyEnvironmentVariableMissing`` and the errors of ``load(path:)``.
    public static func load(
        fromEnvironmentVariable name: String = defaultEnvironmentVariable,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SenderError) -> APNsSigningKey {
        guard let path = environment[name], !path.isEmpty else {
            throw SenderError(
                .keyEnvironmentVariableMissing,
                "set \(name) to the path of the APNs .p8 key file (the key itself never goes in the environment)"
            )
        }
        return try load(path: path)
    }

    /// The public half, for registering the key with a gateway or verifying tokens in tests.
    public var publicKey: P256.Signing.PublicKey { self.privateKey.publicKey }

    public var description: String { "APNsSigningKey(<redacted>)" }
    public var debugDescription: String { self.description }
}
