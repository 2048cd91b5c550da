import Crypto
import Foundation
import Testing

@testable import Sender

@Suite("APNs provider token (ES256 JWT)")
struct APNsProviderTokenTests {
    @Test("header is alg ES256 + kid, claims are iss + integer iat, and nothing else")
    func shape() throws {
        let key = P256.Signing.PrivateKey()
        let issued = Date(timeIntervalSince1970: 1_700_000_123.987)
        let token = APNsProviderToken.sign(
            keyID: APNsTestKeys.keyID,
            teamID: APNsTestKeys.teamID,
            issuedAt: issued,
            key: APNsSigningKey(privateKey: key)
        )
        let jwt = try DecodedJWT(token.jwt)
        #expect(jwt.header.count == 2)
        #expect(jwt.header["alg"] as? String == "ES256")
        #expect(jwt.header["kid"] as? String == APNsTestKeys.keyID)
        #expect(jwt.claims.count == 2)
        #expect(jwt.claims["iss"] as? String == APNsTestKeys.teamID)
        // iat is a JSON integer, truncated to whole seconds, not a string.
        let iat = try #require(jwt.claims["iat"] as? NSNumber)
        #expect(!(jwt.claims["iat"] is String))
        #expect(iat.int64Value == 1_700_000_123)
        #expect(token.issuedAt == 1_700_000_123)
        // The claims segment is exactly the compact JSON we promise (integer iat, sorted keys).
        let claimsText = String(
            decoding: try DecodedJWT.base64URLDecode(String(token.jwt.split(separator: ".")[1])),
            as: UTF8.self
        )
        #expect(claimsText == #"{"iat":1700000123,"iss":"DEF123GHIJ"}"#)
    }

    @Test("signature is a 64-byte raw r||s that verifies with the public key and fails with another")
    func signatureVerifies() throws {
        let key = P256.Signing.PrivateKey()
        let token = APNsProviderToken.sign(
            keyID: APNsTestKeys.keyID,
            teamID: APNsTestKeys.teamID,
            issuedAt: Date(),
            key: APNsSigningKey(privateKey: key)
        )
        let jwt = try DecodedJWT(token.jwt)
        #expect(jwt.signature.count == 64)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: jwt.signature)
        #expect(key.publicKey.isValidSignature(signature, for: Array(jwt.signingInput.utf8)))
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: Array(jwt.signingInput.utf8)))
        // Tampering with the claims breaks the signature.
        #expect(!key.publicKey.isValidSignature(signature, for: Array((jwt.signingInput + "x").utf8)))
    }

    @Test("description and fingerprint never contain the JWT")
    func redaction() {
        let token = APNsProviderToken.sign(
            keyID: APNsTestKeys.keyID,
            teamID: APNsTestKeys.teamID,
            issuedAt: Date(),
            key: APNsSigningKey(privateKey: P256.Signing.PrivateKey())
        )
        #expect(token.fingerprint.count == 8)
        #expect(token.fingerprint.allSatisfy { $0.isHexDigit })
        #expect(!"\(token)".contains(token.jwt))
        #expect(!"\(token)".contains(String(token.jwt.prefix(20))))
        let signingKey = APNsSigningKey(privateKey: P256.Signing.PrivateKey())
        #expect("\(signingKey)" == "APNsSigningKey(<redacted>)")
        #expect(String(reflecting: signingKey) == "APNsSigningKey(<redacted>)")
    }
}
