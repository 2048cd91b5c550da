import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Makes APNs-style provider key files for demos and tests: a fresh P-256 key as `AuthKey_<keyID>.p8`
/// (PKCS#8 PEM, mode 0600) and its public half as `AuthKey_<keyID>.pub.pem`.
///
/// Real deployments use the `.p8` Apple issues; this only mirrors its format so the sender and the gateway can be
/// wired up locally.
public enum ProviderKeyFiles: Sendable {
    /// The paths of a written key pair.
    public struct Paths: Sendable, Hashable {
        /// `AuthKey_<keyID>.p8`: the private key (PKCS#8 PEM, mode 0600).
        public var privateKey: String
        /// `AuthKey_<keyID>.pub.pem`: the public key (SubjectPublicKeyInfo PEM).
        public var publicKey: String
    }

    /// Writes a fresh key pair into `directory` (created if needed); never overwrites an existing key.
    ///
    /// - Parameters:
    ///   - keyID: The key id used in the file names (letters and digits only).
    ///   - directory: Where to write.
    /// - Returns: The two paths.
    /// - Throws: ``GatewayError/Code/invalidConfiguration`` for a key id that is not alphanumeric, and
    ///   ``GatewayError/Code/invalidProviderKey`` when a file exists already or cannot be written.
    public static func generate(keyID: String, in directory: String) throws(GatewayError) -> Paths {
        guard !keyID.isEmpty, keyID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw .invalidConfiguration("key id \"\(keyID)\" must be letters and digits (Apple's are 10 characters)")
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .invalidProviderKey("cannot create \(directory): \(error); choose a writable --out-dir")
        }
        let key = P256.Signing.PrivateKey()
        let paths = Paths(
            privateKey: (directory as NSString).appendingPathComponent("AuthKey_\(keyID).p8"),
            publicKey: (directory as NSString).appendingPathComponent("AuthKey_\(keyID).pub.pem")
        )
        try self.writeNew(paths.privateKey, key.pemRepresentation + "\n", mode: 0o600)
        try self.writeNew(paths.publicKey, key.publicKey.pemRepresentation + "\n", mode: 0o644)
        return paths
    }

    /// Creates `path` exclusively with `mode` (not subject to the umask's widening) and writes `text`, synced.
    private static func writeNew(_ path: String, _ text: String, mode: mode_t) throws(GatewayError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else {
            if errno == EEXIST {
                throw .invalidProviderKey("\(path) exists already: remove it or choose another --out-dir")
            }
            throw .invalidProviderKey("cannot create \(path): \(FileDescriptorIO.lastError())")
        }
        defer { FileDescriptorIO.close(fd) }
        guard fchmod(fd, mode) == 0, FileDescriptorIO.writeAll(fd, Array(text.utf8)), FileDescriptorIO.sync(fd) else {
            let reason = FileDescriptorIO.lastError()
            _ = unlink(path)
            throw .invalidProviderKey("cannot write \(path): \(reason)")
        }
    }
}
