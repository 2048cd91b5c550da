import Foundation
import PushTransport

@testable import E2EECore

/// What must never reach a log: marker plaintexts, key bytes (hex and base64), and the envelopes (whole, or any
/// 16-character piece of their base64).
struct SecretProbe {
    private(set) var literals: [(name: String, value: String)] = []
    private var envelopePieces: Set<Substring> = []
    static let pieceLength = 16

    mutating func add(_ name: String, _ value: String) {
        self.literals.append((name, value))
    }

    /// Adds a secret's bytes as lowercase and uppercase hex and as standard and URL-safe base64.
    mutating func add(_ name: String, bytes: [UInt8]) {
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let base64 = Data(bytes).base64EncodedString()
        let base64URL = base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        self.add(name + " (hex)", hex)
        self.add(name + " (HEX)", hex.uppercased())
        self.add(name + " (base64)", String(base64.prefix(while: { $0 != "=" })))
        self.add(name + " (base64url)", base64URL)
    }

    /// Adds every secret of an identity: the Ed25519 seed and expanded secret key, every device key's scalar.
    mutating func add(identity: Identity) {
        let name = identity.userID
        self.add("\(name) signing seed", bytes: identity.signingKey.seed.withUnsafeBytes { Array($0) })
        self.add(
            "\(name) signing secret key",
            bytes: identity.signingKey.expandedSecretKey.withUnsafeBytes { Array($0) }
        )
        for (index, key) in identity.deviceKeys.enumerated() {
            self.add("\(name) device key \(index)", bytes: key.privateKey.secret.withUnsafeBytes { Array($0) })
        }
    }

    /// Adds an APNs body's envelope: its base64 text and all of its 16-character pieces.
    mutating func add(envelopeOf body: [UInt8]) throws {
        let base64 = Data(try APNsAlertTransport.envelope(fromBody: body).serialized).base64EncodedString()
        self.add("envelope", base64)
        var start = base64.startIndex
        while let end = base64.index(start, offsetBy: Self.pieceLength, limitedBy: base64.endIndex) {
            self.envelopePieces.insert(base64[start..<end])
            start = base64.index(after: start)
        }
    }

    /// The names of the secrets found in `text`.
    func leaks(in text: String) -> [String] {
        var found = self.literals.filter { text.contains($0.value) }.map(\.name)
        var start = text.startIndex
        while let end = text.index(start, offsetBy: Self.pieceLength, limitedBy: text.endIndex) {
            if self.envelopePieces.contains(text[start..<end]) {
                found.append("a 16-character piece of an envelope: \(text[start..<end])")
                break
            }
            start = text.index(after: start)
        }
        return found
    }
}
