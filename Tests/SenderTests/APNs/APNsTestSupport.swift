import Crypto
import Foundation
import Locking
import Logging

@testable import Sender

/// Records every delay it is asked to sleep, and returns at once.
final class RecordingSleeper: Sendable {
    private let delays = PThreadMutex<[Duration]>([])

    var recorded: [Duration] { self.delays.withLock { $0 } }

    var sleep: @Sendable (Duration) async throws -> Void {
        { duration in self.delays.withLock { $0.append(duration) } }
    }
}

/// A fresh temporary folder, removed by `cleanup()`.
struct TemporaryFolder {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("apns-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        self.path = base.path
    }

    func file(_ name: String) -> String { (self.path as NSString).appendingPathComponent(name) }

    func cleanup() { try? FileManager.default.removeItem(atPath: self.path) }
}

enum APNsTestKeys {
    static let keyID = "ABC123DEFG"
    static let teamID = "DEF123GHIJ"

    /// Writes a fresh `.p8`-style PKCS#8 PEM key with the given mode and returns its private key.
    static func writeKey(to path: String, mode: Int = 0o600) throws -> P256.Signing.PrivateKey {
        let key = P256.Signing.PrivateKey()
        _ = FileManager.default.createFile(atPath: path, contents: Data(key.pemRepresentation.utf8))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return key
    }
}

/// Splits a compact JWT and decodes its header and claims as JSON objects.
struct DecodedJWT {
    let header: [String: Any]
    let claims: [String: Any]
    let signingInput: String
    let signature: [UInt8]

    init(_ jwt: String) throws {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { throw DecodeFailure(why: "expected 3 parts, got \(parts.count)") }
        self.header = try Self.object(parts[0])
        self.claims = try Self.object(parts[1])
        self.signingInput = "\(parts[0]).\(parts[1])"
        self.signature = try Self.base64URLDecode(parts[2])
    }

    struct DecodeFailure: Error { let why: String }

    static func base64URLDecode(_ text: String) throws -> [UInt8] {
        guard !text.contains("="), !text.contains("+"), !text.contains("/") else {
            throw DecodeFailure(why: "not base64url without padding: \(text)")
        }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { throw DecodeFailure(why: "bad base64") }
        return Array(data)
    }

    private static func object(_ part: String) throws -> [String: Any] {
        let bytes = try base64URLDecode(part)
        guard let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw DecodeFailure(why: "not a JSON object")
        }
        return object
    }
}
