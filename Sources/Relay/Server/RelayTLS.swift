import Foundation
import Locking
import LoopbackPKI
public import NIOSSL
public import RelayClient

/// The relay's TLS server configuration: a certificate chain and key from files, or a throwaway loopback CA.
public enum RelayTLS: Sendable {
    /// Loads a PEM certificate chain and a PEM private key; the key file must be readable by its owner only.
    ///
    /// - Throws: `configuration` saying which file is wrong and what to do.
    public static func load(certificatePath: String, keyPath: String) throws(RelayError) -> TLSConfiguration {
        let (chain, key) = try Self.read(certificatePath: certificatePath, keyPath: keyPath)
        return Self.server(chain: chain, key: key)
    }

    /// A certificate and key read from files and read again on ``reload()`` (SIGHUP): each new handshake presents the
    /// pair read last; connections already open keep theirs.
    public final class Files: Sendable {
        public let certificatePath: String
        public let keyPath: String
        private let current: PThreadMutex<(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey)>

        /// - Throws: `configuration` when the files cannot be used now.
        public init(certificatePath: String, keyPath: String) throws(RelayError) {
            self.certificatePath = certificatePath
            self.keyPath = keyPath
            self.current = PThreadMutex(try RelayTLS.read(certificatePath: certificatePath, keyPath: keyPath))
        }

        /// Reads both files again; on any problem the pair in use stays.
        ///
        /// - Throws: `configuration` naming what is wrong (the old pair is still served).
        public func reload() throws(RelayError) {
            let pair = try RelayTLS.read(certificatePath: self.certificatePath, keyPath: self.keyPath)
            do {
                // The new pair must belong together before it replaces the one in use.
                var check = TLSConfiguration.makeServerConfiguration(
                    certificateChain: pair.chain.map { .certificate($0) },
                    privateKey: .privateKey(pair.key)
                )
                check.minimumTLSVersion = .tlsv12
                _ = try NIOSSLContext(configuration: check)
            } catch {
                throw RelayError(
                    .configuration,
                    "the new TLS certificate \(self.certificatePath) and key \(self.keyPath) cannot be used together; "
                        + "the previous ones are still served"
                )
            }
            self.current.withLock { $0 = pair }
        }

        /// The server configuration: the pair read first, replaced at each handshake by the pair read last.
        public var configuration: TLSConfiguration {
            let (chain, key) = self.current.withLock { $0 }
            var tls = RelayTLS.server(chain: chain, key: key)
            tls.sslContextCallback = { [self] _, promise in
                let (chain, key) = self.current.withLock { $0 }
                var override = NIOSSLContextConfigurationOverride()
                override.certificateChain = chain.map { .certificate($0) }
                override.privateKey = .privateKey(key)
                promise.succeed(override)
            }
            return tls
        }
    }

    static func read(
        certificatePath: String,
        keyPath: String
    ) throws(RelayError) -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        try Self.checkOwnerOnly(keyPath)
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
            guard !chain.isEmpty else {
                throw RelayError(.configuration, "no certificate in \(certificatePath): give a PEM certificate chain")
            }
            let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
            return (chain, key)
        } catch let error as RelayError {
            throw error
        } catch {
            throw RelayError(
                .configuration,
                "cannot load the TLS certificate \(certificatePath) or key \(keyPath): each must be PEM (a certificate "
                    + "chain, a private key)"
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
            try pki.writeCA(to: caPath)
            return (Self.server(chain: pki.chain, key: pki.serverKey), caPath)
        } catch let error as LoopbackCertificates.FileRefused {
            throw RelayError(.configuration, "--self-signed-tls-dir \(directory): \(error.message)")
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
