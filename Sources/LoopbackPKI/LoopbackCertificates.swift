import Crypto
import Foundation
public import NIOSSL
import X509

/// A throwaway PKI for a TLS server on loopback (the local APNs gateway, a relay started with a self-signed
/// certificate): a CA and a server certificate for `localhost` and `127.0.0.1`, both P-256, made fresh each time.
///
/// The private keys stay in memory; only the certificates are meant to be written (the CA's is what clients trust).
/// Validity uses the wall clock, because TLS clients check it against theirs: one hour back (clock skew) to thirty
/// days ahead.
public struct LoopbackCertificates: Sendable {
    /// The CA certificate, PEM: what clients trust.
    public let caCertificatePEM: String
    /// The server certificate, PEM.
    public let serverCertificatePEM: String
    /// The chain a server presents: its certificate, then the CA's.
    public let chain: [NIOSSLCertificate]
    /// The server certificate's private key.
    public let serverKey: NIOSSLPrivateKey
    /// The same key, PKCS#8 PEM: for a test or a tool that hands it to a server as a file (mode 0600); the servers
    /// here keep theirs in memory.
    public let serverKeyPEM: String
    /// The CA's common name: who made these certificates (`e2ee-relay local CA`, `APNsGateway local CA`).
    public let caCommonName: String

    /// Makes the CA (named `caCommonName`, with the organisation "e2ee-call-notifications") and the server
    /// certificate it signs.
    ///
    /// - Throws: What swift-certificates or NIOSSL threw; callers wrap it in their own error with what to do.
    public init(caCommonName: String) throws {
        let now = Date()
        let notBefore = now.addingTimeInterval(-3600)
        let notAfter = now.addingTimeInterval(30 * 24 * 3600)

        let caKey = P256.Signing.PrivateKey()
        let caPublicKey = Certificate.PublicKey(caKey.publicKey)
        let caName = try Self.caName(caCommonName)
        self.caCommonName = caCommonName
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

        self.caCertificatePEM = try ca.serializeAsPEM().pemString
        self.serverCertificatePEM = try server.serializeAsPEM().pemString
        self.chain = [
            try NIOSSLCertificate(bytes: Array(self.serverCertificatePEM.utf8), format: .pem),
            try NIOSSLCertificate(bytes: Array(self.caCertificatePEM.utf8), format: .pem),
        ]
        self.serverKeyPEM = serverKey.pemRepresentation
        self.serverKey = try NIOSSLPrivateKey(bytes: Array(self.serverKeyPEM.utf8), format: .pem)
    }

    private static func caName(_ commonName: String) throws -> DistinguishedName {
        try DistinguishedName {
            OrganizationName("e2ee-call-notifications")
            CommonName(commonName)
        }
    }

    /// Writes the CA certificate to `path` (atomically), unless a file is there that this kind of server did not make:
    /// a CA certificate under another common name (another server's loopback CA, which its clients trust), any other
    /// certificate, or a file that is not one. Two servers given the same folder then fail to start instead of the
    /// second silently replacing what the first one's clients trust.
    ///
    /// - Throws: ``FileRefused`` naming the file and who made it; what writing threw.
    public func writeCA(to path: String) throws {
        if let existing = FileManager.default.contents(atPath: path) {
            let madeHere =
                (try? Certificate(pemEncoded: String(decoding: existing, as: UTF8.self)))
                .map { $0.subject == (try? Self.caName(self.caCommonName)) } ?? false
            guard madeHere else {
                let owner =
                    (try? Certificate(pemEncoded: String(decoding: existing, as: UTF8.self)))
                    .map { "the certificate of \($0.subject)" } ?? "a file that is not a certificate"
                throw FileRefused(
                    message: "\(path) holds \(owner), not one made by \(self.caCommonName); it is not overwritten "
                        + "(clients of whoever made it trust it): give this server a folder of its own"
                )
            }
        }
        try Data(self.caCertificatePEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// A certificate file that is not overwritten, and why.
    public struct FileRefused: Error, CustomStringConvertible {
        public let message: String
        public var description: String { self.message }
    }

    /// `subjectAltName` = { dNSName "localhost", iPAddress 127.0.0.1 }, DER-encoded by hand (RFC 5280 §4.2.1.6):
    /// SEQUENCE { [2] IA5String "localhost", [7] OCTET STRING 7f000001 }.
    private static var subjectAlternativeNames: Certificate.Extension {
        let names: [UInt8] = [0x82, 0x09] + Array("localhost".utf8) + [0x87, 0x04, 127, 0, 0, 1]
        let value: [UInt8] = [0x30, UInt8(names.count)] + names
        return Certificate.Extension(oid: .X509ExtensionID.subjectAlternativeName, critical: false, value: value[...])
    }
}
