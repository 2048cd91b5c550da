import Foundation
import LoopbackPKI
import NIOSSL

/// The gateway's throwaway PKI (``LoopbackCertificates``), made fresh at every start.
///
/// Only the certificates are written (`ca.pem`, which clients trust, and `server.pem`, the served chain); the
/// private keys stay in memory. Validity uses the wall clock, not the injected one, because TLS clients check it
/// against theirs.
struct GatewayCertificates {
    let pki: LoopbackCertificates
    let caCertificatePEM: String
    let serverChainPEM: String
    let sslContext: NIOSSLContext

    /// Makes the CA and server certificate and the TLS context (TLS 1.2+, ALPN `h2`).
    static func make() throws(GatewayError) -> GatewayCertificates {
        do {
            let pki = try LoopbackCertificates(caCommonName: "APNsGateway local CA")
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: pki.chain.map { .certificate($0) },
                privateKey: .privateKey(pki.serverKey)
            )
            tls.minimumTLSVersion = .tlsv12
            tls.applicationProtocols = ["h2"]
            return GatewayCertificates(
                pki: pki,
                caCertificatePEM: pki.caCertificatePEM,
                serverChainPEM: pki.serverCertificatePEM + "\n" + pki.caCertificatePEM,
                sslContext: try NIOSSLContext(configuration: tls)
            )
        } catch {
            throw .tlsSetupFailed("cannot make the gateway's certificates: \(error)")
        }
    }

    /// Writes `ca.pem` and `server.pem` into `directory` (created if needed), each atomically.
    func write(caPath: String, serverPath: String) throws(GatewayError) {
        do {
            let directory = (caPath as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try self.pki.writeCA(to: caPath)
            try Data(self.serverChainPEM.utf8).write(to: URL(fileURLWithPath: serverPath), options: .atomic)
        } catch let error as LoopbackCertificates.FileRefused {
            throw .tlsSetupFailed("--tls-dir: \(error.message)")
        } catch {
            throw .tlsSetupFailed(
                "cannot write the gateway certificates to \(caPath): \(error); check the TLS directory is writable"
            )
        }
    }
}
