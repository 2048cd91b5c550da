import ArgumentParser
import E2EECore

/// A crypto suite named on the command line (`--suite classical|xwing`, docs/PROTOCOL.md §16.4).
enum SuiteName: String, CaseIterable, ExpressibleByArgument {
    /// Suite 0x0001: X25519 / ChaCha20-Poly1305.
    case classical
    /// Suite 0x0002: X-Wing (ML-KEM-768 + X25519) / AES-256-GCM, post-quantum.
    case xwing

    var suite: CryptoSuite {
        switch self {
        case .classical: .classical
        case .xwing: .xwing
        }
    }
}
