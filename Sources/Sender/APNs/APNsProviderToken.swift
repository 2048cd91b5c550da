import Crypto
public import Foundation

/// One signed APNs provider token (an ES256 JWT) and when it was issued.
///
/// The JWT is the credential: ``description`` is redacted, and logs carry only ``fingerprint``, a short SHA-256
/// prefix that identifies a token without revealing it.
public struct APNsProviderToken: Sendable, Hashable, CustomStringConvertible {
    /// The compact JWT: `base64url(header).base64url(claims).base64url(r || s)`.
    public let jwt: String
    /// The `iat` claim, in whole seconds since 1970.
    public let issuedAt: Int64
    /// A counter that grows by one with every token a manager issues; tells apart "the token I used" and "a newer
    /// one someone already made".
    public let generation: Int

    /// The first 8 hex digits of SHA-256(jwt), safe to log.
    public var fingerprint: String {
        SHA256.hash(data: Array(self.jwt.utf8)).prefix(4).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    public var description: String { "APNsProviderToken(generation: \(self.generation), sha256: \(self.fingerprint))" }

    /// Signs a new token.
    ///
    /// The header is `{"alg":"ES256","kid":<keyID>}` and the claims `{"iss":<teamID>,"iat":<seconds>}` with `iat` an
    /// integer, encoded with sorted keys so the bytes are deterministic apart from the signature.
    ///
    /// - Parameters:
    ///   - keyID: The 10-character key ID of the `.p8` key.
    ///   - teamID: The 10-character team ID.
    ///   - issuedAt: The issue time; truncated to whole seconds.
    ///   - key: The signing key.
    ///   - generation: The manager's counter for this token.
    /// - Returns: The signed token.
    public static func sign(
        keyID: String,
        teamID: String,
        issuedAt: Date,
        key: APNsSigningKey,
        generation: Int = 0
    ) -> APNsProviderToken {
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let header = Self.base64URL(Array(#"{"alg":"ES256","kid":"\#(Self.jsonEscaped(keyID))"}"#.utf8))
        let claims = Self.base64URL(Array(#"{"iat":\#(iat),"iss":"\#(Self.jsonEscaped(teamID))"}"#.utf8))
        let signingInput = "\(header).\(claims)"
        // P-256 signing over SHA-256 does not fail for a valid key; swift-crypto only throws on RNG failure.
        let signature = try! key.privateKey.signature(for: Array(signingInput.utf8))
        let jwt = "\(signingInput).\(Self.base64URL(Array(signature.rawRepresentation)))"
        return APNsProviderToken(jwt: jwt, issuedAt: iat, generation: generation)
    }

    /// Encodes bytes as base64url without padding (RFC 7515 §2).
    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Escapes a string for a JSON string literal (key and team IDs are alphanumeric; this keeps odd input valid).
    private static func jsonEscaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
