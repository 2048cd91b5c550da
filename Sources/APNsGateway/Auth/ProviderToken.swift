import Crypto
import Foundation

/// A provider token (JWT) taken apart: header `{alg, kid}`, claims `{iss, iat}`, the signed text and signature.
///
/// Parsing checks the shape only; ``ProviderTokenVerifier`` checks key, signature and time.
struct ProviderToken: Sendable {
    var keyID: String
    var teamID: String
    /// `iat` in seconds since 1970.
    var issuedAt: Int64
    /// `header.claims` as sent: what the signature covers.
    var signingInput: [UInt8]
    /// The JOSE signature: raw r||s, 64 bytes.
    var signature: [UInt8]

    /// Parses `bearer <jwt>`; `nil` when anything about the shape is wrong.
    init?(authorization: String, acceptStringIssuedAt: Bool) {
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let segments = parts[1].trimmingCharacters(in: .whitespaces).split(
            separator: ".",
            omittingEmptySubsequences: false
        )
        guard segments.count == 3,
            let headerBytes = Base64URL.decode(segments[0]),
            let claimsBytes = Base64URL.decode(segments[1]),
            let signature = Base64URL.decode(segments[2]),
            signature.count == 64,
            let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)),
            header.alg == "ES256",
            !header.kid.isEmpty,
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimsBytes)),
            !claims.iss.isEmpty
        else { return nil }
        switch claims.iat {
        case .number(let value):
            self.issuedAt = value
        case .string(let value):
            guard acceptStringIssuedAt else { return nil }
            self.issuedAt = value
        }
        self.keyID = header.kid
        self.teamID = claims.iss
        self.signingInput = Array("\(segments[0]).\(segments[1])".utf8)
        self.signature = signature
    }

    /// Whether `publicKey` made the signature.
    func isSigned(by publicKey: P256.Signing.PublicKey) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: self.signature) else {
            return false
        }
        return publicKey.isValidSignature(signature, for: self.signingInput)
    }

    private struct Header: Decodable {
        var alg: String
        var kid: String
    }

    private struct Claims: Decodable {
        var iss: String
        var iat: IssuedAt
    }

    /// `iat` as a JSON integer or a string of decimal digits.
    private enum IssuedAt: Decodable {
        case number(Int64)
        case string(Int64)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int64.self) {
                self = .number(number)
                return
            }
            if let number = try? container.decode(Double.self), number.isFinite,
                number == number.rounded(), abs(number) < 1e15
            {
                self = .number(Int64(number))
                return
            }
            let text = try container.decode(String.self)
            guard !text.isEmpty, text.allSatisfy(\.isASCIIDigit), let value = Int64(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "iat is not a number")
            }
            self = .string(value)
        }
    }
}
