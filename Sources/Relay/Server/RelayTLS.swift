import Crypto
import Foundation
public import NIOSSL
public import RelayClient
import X509

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
            let now = Date()
            let notBefore = now.addingTimeInterval(-3600)
            let notAfter = now.addingTimeInterval(30 * 24 * 3600)
            let caKey = P256.Signing.PrivateKey()
            let caPublicKey = Certificate.PublicKey(caKey.publicKey)
            let caName = try DistinguishedName {
                OrganizationName("e2ee-call-notifications")
                CommonName("e2ee-relay local CA")
            }
            let caKeyID = SubjectKeyIdentifier(hash: caPublicKey)
            let ca = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: caPublicKey,
                notValidBefore: notBefore,
                notValidAfter: notAfter,
                issuer: caName,
                subject: caName,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                    Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                    caKeyID
                },
                issuerPrivateKey: Certificate.PrivateKey(caKey)
            )
            let serverKey = P256.Signing.PrivateKey()
            let serverPublicKey = Certificate.PublicKey(serverKey.publicKey)
            let server = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: serverPublicKey,
                notValidBefore: notBefore,
                notValidAfter: notAfter,
                issuer: caName,
                subject: try DistinguishedName {
                    OrganizationName("e2ee-call-notifications")
                    CommonName("localhost")
                },
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([.serverAuth])
                    SubjectKeyIdentifier(hash: serverPublicKey)
                    AuthorityKeyIdentifier(keyIdentifier: caKeyID.keyIdentifier)
                    Self.subjectAlternativeNames
                },
                issuerPrivateKey: Certificate.PrivateKey(caKey)
            )
            let caPEM = try ca.serializeAsPEM().pemString
            let caPath = (directory as NSString).appendingPathComponent("ca.pem")
            try Data(caPEM.utf8).write(to: URL(fileURLWithPath: caPath), options: .atomic)
            let configuration = Self.server(
                chain: [
                    try NIOSSLCertificate(bytes: Array(try server.serializeAsPEM().pemString.utf8), format: .pem),
                    try NIOSSLCertificate(bytes: Array(caPEM.utf8), format: .pem),
                ],
                key: try NIOSSLPrivateKey(bytes: Array(serverKey.pemRepresentation.utf8), format: .pem)
            )
            return (configuration, caPath)
        } catch let error as RelayError {
            throw error
        } catch {
            throw RelayError(.configuration, "cannot make the loopback TLS certificates in \(directory): \(error)")
        }
    }

    /// `subjectAltName` = { dNSName "localhost", iPAddress 127.0.0.1 }, DER-encoded by hand (RFC 5280 §4.2.1.6).
    private static var subjectAlternativeNames: Certificate.Extension {
        let names: [UInt8] = [0x82, 0x09] + Array("localhost".utf8) + [0x87, 0x04, 127, 0, 0, 1]
        let value: [UInt8] = [0x30, UInt8(names.count)] + names
        return Certificate.Extension(oid: .X509ExtensionID.subjectAlternativeName, critical: false, value: value[...])
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
