import Foundation
import LoopbackPKI
public import NIOSSL
public import RelayClient

/// The relay's TLS server configuration: a certificate chain and key from files, or a throwaway loopback CA.
public enum RelayTLS: Sendable {
    /// Loads a PEM certificate chain and a PEM private key; the key file must be readable by its owner only.
    ///
    /// - Throws: `configuration` saying which file is wrong and what to do.
    public static func load(certificatePath: String, keyPath: String) throws(RelayError) -> TLSConfiguration {
        try Self.checkOwnerOnly(keyPath)
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
            guard !chain.isEmpty else {
                throw RelayError(.configuration, "no certificate in \(certificatePath): give a PEM certificate chain")
            }
            let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
            return Self.server(chain: chain, key: key)
        } catch let error as RelayError {
            throw error
        } catch {
            throw RelayError(
                .configuration,
                "cannot load the TLS certificate \(certificatePath) or key \(keyPath) (PEM expected): \(error)"
            )
        }
    }

    /// Makes a CA and a server certificate for `localhost` and `127.0.0.1`, writes the CA certificate to
    /// `<directory>/ca.pem` (clients trust it), and keeps both private keys in memory.
    ///
    /// - Returns: The server configuration and the CA file's path.
    public static func selfSigned(directory: String) throws(RelayError) -> (TLSConfiguration, caPath: String) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let pki = try LoopbackCertificates(caCommonName: "e2ee-relay local CA")
            let caPath = (directory as NSString).appendingPathComponent("ca.pem")
            try Data(pki.caCertificatePEM.utf8).write(to: URL(fileURLWithPath: caPath), options: .atomic)
            return (Self.server(chain: pki.chain, key: pki.serverKey), caPath)
        } catch {
            throw RelayError(.configuration, "cannot make the loopback TLS certificates in \(directory): \(error)")
        }
    }

    private static func server(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) -> TLSConfiguration {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        tls.minimumTLSVersion = .tlsv12
        return tls
    }

    private static func checkOwnerOnly(_ path: String) throws(RelayError) {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue
        else {
            throw RelayError(.configuration, "cannot read the TLS key file \(path): check the path")
        }
        guard mode & 0o077 == 0 else {
            throw RelayError(
                .configuration,
                "the TLS key file \(path) has mode \(String(mode, radix: 8)) and others may read it; run: chmod 600 \(path)"
            )
        }
    }
}
