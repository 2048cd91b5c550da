import Crypto
import Foundation
import NIOSSL
import X509

/// The gateway's throwaway PKI: a self-signed CA and a server certificate for `localhost` and `127.0.0.1`,
/// made fresh at every start.
///
/// Only the certificates are written (`ca.pem`, which clients trust, and `server.pem`, the served chain); the
/// private keys stay in memory. Validity uses the wall clock, not the injected one, because TLS clients check it
/// against theirs: one hour back (clock skew) to thirty days ahead.
struct GatewayCertificates {
    let caCertificatePEM: String
    let serverChainPEM: String
    let sslContext: NIOSSLContext

    /// Makes the CA and server certificate and the TLS context (TLS 1.2+, ALPN `h2`).
    static func make() throws(GatewayError) -> GatewayCertificates {
        do {
            let now = Date()
            let notBefore = now.addingTimeInterval(-3600)
            let notAfter = now.addingTimeInterval(30 * 24 * 3600)

            let caKey = P256.Signing.PrivateKey()
            let caPublicKey = Certificate.PublicKey(caKey.publicKey)
            let caName = try DistinguishedName {
                OrganizationName("e2ee-call-notifications")
                CommonName("APNsGateway local CA")
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
            let serverName = try DistinguishedName {
                OrganizationName("e2ee-call-notifications")
                CommonName("localhost")
            }
            let server = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: serverPublicKey,
                notValidBefore: notBefore,
                notValidAfter: notAfter,
                issuer: caName,
                subject: serverName,
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
            let serverPEM = try server.serializeAsPEM().pemString
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: [
                    .certificate(try NIOSSLCertificate(bytes: Array(serverPEM.utf8), format: .pem)),
                    .certificate(try NIOSSLCertificate(bytes: Array(caPEM.utf8), format: .pem)),
                ],
                privateKey: .privateKey(
                    try NIOSSLPrivateKey(bytes: Array(serverKey.pemRepresentation.utf8), format: .pem)
                )
            )
            tls.minimumTLSVersion = .tlsv12
            tls.applicationProtocols = ["h2"]
            return GatewayCertificates(
                caCertificatePEM: caPEM,
                serverChainPEM: serverPEM + "\n" + caPEM,
                sslContext: try NIOSSLContext(configuration: tls)
            )
        } catch let error as GatewayError {
            throw error
        } catch {
            throw .tlsSetupFailed("cannot make the gateway's certificates: \(error)")
        }
    }

    /// Writes `ca.pem` and `server.pem` into `directory` (created if needed), each atomically.
    func write(caPath: String, serverPath: String) throws(GatewayError) {
        do {
            let directory = (caPath as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data(self.caCertificatePEM.utf8).write(to: URL(fileURLWithPath: caPath), options: .atomic)
            try Data(self.serverChainPEM.utf8).write(to: URL(fileURLWithPath: serverPath), options: .atomic)
        } catch {
            throw .tlsSetupFailed(
                "cannot write the gateway certificates to \(caPath): \(error); check the TLS directory is writable"
            )
        }
    }

    /// `subjectAltName` = { dNSName "localhost", iPAddress 127.0.0.1 }, DER-encoded by hand (RFC 5280 §4.2.1.6):
    /// SEQUENCE { [2] IA5String "localhost", [7] OCTET STRING 7f000001 }.
    private static var subjectAlternativeNames: Certificate.Extension {
        let dnsName: [UInt8] = [0x82, 0x09] + Array("localhost".utf8)
        let ipAddress: [UInt8] = [0x87, 0x04, 127, 0, 0, 1]
        let names = dnsName + ipAddress
        let value: [UInt8] = [0x30, UInt8(names.count)] + names
        return Certificate.Extension(oid: .X509ExtensionID.subjectAlternativeName, critical: false, value: value[...])
    }
}
