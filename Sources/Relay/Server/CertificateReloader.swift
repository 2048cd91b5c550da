public import Logging
public import ServiceLifecycle
import UnixSignals

/// Reads the TLS certificate and key again on SIGHUP (docs/RELAY.md "Operating"): new connections get the new pair,
/// open ones keep theirs, nothing is dropped. A pair that cannot be used is logged and the old one stays.
public struct CertificateReloader: Service {
    let files: RelayTLS.Files
    let logger: Logger

    public init(files: RelayTLS.Files, logger: Logger) {
        self.files = files
        self.logger = logger
    }

    public func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            do throws(RelayError) {
                try self.files.reload()
                self.logger.notice(
                    "TLS certificate reloaded",
                    metadata: ["certificate": "\(self.files.certificatePath)", "key": "\(self.files.keyPath)"]
                )
            } catch {
                self.logger.error("TLS certificate not reloaded: \(error.message)")
            }
        }
    }
}
