import Crypto
import E2EECore

/// A delivery token: 32 random bytes a recipient hands to its contacts inside the encrypted channel; a submit
/// carrying it is authorised for that recipient. The relay stores only its SHA-256.
///
/// `description` is redacted: the token is a bearer secret.
public struct DeliveryToken: Sendable, Hashable, CustomStringConvertible {
    /// The 32 token bytes.
    public let bytes: [UInt8]

    /// A new random token.
    public init() {
        self.bytes = RandomBytes.make(32)
    }

    /// Parses the 64 hex digits of a token.
    public init?(hex: String) {
        guard hex.utf8.count == 64, let bytes = Hex.decode(hex) else { return nil }
        self.bytes = bytes
    }

    /// The 64 hex digits (the `Authorization: Bearer` value).
    public var hex: String { Hex.encode(self.bytes) }

    /// What the relay stores.
    public var sha256: [UInt8] { Array(SHA256.hash(data: self.bytes)) }

    public var description: String { "DeliveryToken(<redacted>)" }
}

/// Random bytes from the system CSPRNG.
package enum RandomBytes {
    package static func make(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
