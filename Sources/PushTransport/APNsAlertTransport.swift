public import E2EECore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The APNs transport of docs/PROTOCOL.md §4: one uniform `alert` push body for every message kind, the fixed
/// placeholder alert with `mutable-content`, and the envelope in base64 under the one custom key `"e2ee"`, within
/// APNs' 4,096-byte limit. A sender and a relay that receives envelopes frame them with this, byte for byte alike;
/// the device unframes with it.
public enum APNsAlertTransport: PushTransport {
    public static let name = "apns"

    /// APNs' limit for an `alert` push body.
    public static let maximumBodyLength = 4096

    /// The one custom top-level key of the APNs body; its value is the base64 envelope.
    public static let payloadKey = "e2ee"
    /// The neutral placeholder shown only if the device never replaces it. Identical for every message.
    public static let placeholderTitle = "New message"
    public static let placeholderBody = "Open the app to view it."

    /// The body bytes before the base64 envelope.
    static let bodyPrefix =
        "{\"aps\":{\"alert\":{\"title\":\"\(placeholderTitle)\",\"body\":\"\(placeholderBody)\"},\"mutable-content\":1},\"\(payloadKey)\":\""
    /// The body bytes after the base64 envelope.
    static let bodySuffix = "\"}"

    private static let prefixBytes = Array(bodyPrefix.utf8)
    private static let suffixBytes = Array(bodySuffix.utf8)

    /// The padding buckets of APNs per crypto suite (docs/PROTOCOL.md §6).
    ///
    /// Classical: 1,536 holds every call invite, cancel and receipt of ordinary size and a text of about 1 KB (all
    /// give APNs bodies of 2,233 bytes); 2,932 is the largest padded plaintext whose body (4,093 bytes) fits APNs'
    /// 4,096 bytes.
    ///
    /// X-Wing: one bucket, 1,844, the largest padded plaintext whose body fits (a 1,131-byte header: body 4,093
    /// bytes, the length of the classical large bucket). Every X-Wing push has the same length whatever its kind;
    /// a second, smaller bucket would add a size class that only separates short messages from long ones.
    public static let padding = PaddingTable([
        .classical: [1536, 2932],
        .xwing: [1844],
    ])

    /// The byte length of the APNs body for a bucket of a suite (classical: 2,233 bytes for 1,536 and 4,093 bytes
    /// for 2,932).
    public static func bodyLength(forBucket bucket: Int, suite: CryptoSuite) -> Int {
        let envelopeLength = suite.headerLength + bucket + suite.tagLength
        return bodyPrefix.utf8.count + bodySuffix.utf8.count + 4 * ((envelopeLength + 2) / 3)
    }

    /// An APNs device token: ``DeviceToken``'s rule (an even number of 64-200 hex digits).
    public static func deviceTokenProblem(_ token: String) -> String? { DeviceToken.problem(token) }

    /// APNs tokens are hex: the same device in either case. ASCII letters alone fold, byte by byte, so nothing is
    /// allocated on the filter's per-line path and no other character compares equal to a hex digit.
    public static func isSameDevice(_ token: String, _ other: String) -> Bool {
        token.utf8.elementsEqual(other.utf8) { Self.asciiLowercase($0) == Self.asciiLowercase($1) }
    }

    private static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// The uniform APNs body of docs/PROTOCOL.md §4 that carries `envelope`: the fixed placeholder alert, then the
    /// envelope in base64.
    ///
    /// - Parameter envelope: A parsed envelope (its ciphertext is a padding bucket + the tag, so the body fits).
    /// - Returns: The body bytes (``bodyLength(forBucket:suite:)``).
    public static func body(for envelope: Envelope) -> [UInt8] {
        let body = Array((bodyPrefix + Data(envelope.serialized).base64EncodedString() + bodySuffix).utf8)
        precondition(body.count <= maximumBodyLength)
        return body
    }

    /// Extracts the envelope from an APNs body.
    ///
    /// - Throws: `.tooLarge` for a body above 4,096 bytes; `.malformedEnvelope` for invalid UTF-8, bad JSON or
    ///   base64; `.foreignPayload` for JSON without our key; then what ``Envelope/init(parsing:)`` throws.
    public static func envelope(fromBody body: [UInt8]) throws(E2EEError) -> Envelope {
        guard body.count <= maximumBodyLength else {
            throw E2EEError(.tooLarge, "the APNs body is \(body.count) bytes; APNs allows 4,096")
        }
        // Fast path: the body this package sends is the fixed prefix, canonical base64, the fixed suffix, decoded
        // here in one pass. Any other body (a non-canonical envelope included) takes the general path, which gives
        // it the same outcome a parser of the whole JSON would.
        if let bytes = Self.canonicalEnvelopeBytes(body) {
            return try Envelope(parsing: bytes, padding: padding)
        }
        // §4: invalid UTF-8 anywhere in the body is malformed, even inside a value no one reads (a JSON parser
        // checks only the strings it decodes).
        guard String(validating: body, as: UTF8.self) != nil else {
            throw Self.malformed("the body is not valid UTF-8")
        }
        let value: String
        do {
            let decoded = try JSONDecoder().decode(BodyShape.self, from: Data(body))
            guard let envelope = decoded.envelope else {
                throw E2EEError(.foreignPayload, "the push carries no \"\(payloadKey)\" key: not ours")
            }
            value = envelope
        } catch let error as E2EEError {
            throw error
        } catch {
            throw Self.malformed("the body is not a JSON object with a string \"\(payloadKey)\"")
        }
        // Strict base64: standard alphabet, padding, no whitespace, and canonical (the unused low bits of the last
        // character are zero): the text must be exactly the encoding of the bytes it decodes to.
        guard let bytes = CanonicalBase64.decode(value) else {
            throw Self.malformed("the envelope is not canonical base64")
        }
        return try Envelope(parsing: bytes, padding: padding)
    }

    /// A `.malformedEnvelope` error, worded as E2EECore words its own.
    private static func malformed(_ what: String, file: String = #fileID, line: Int = #line) -> E2EEError {
        E2EEError(.malformedEnvelope, "malformed envelope: \(what)", file: file, line: line)
    }

    /// The envelope bytes of a body in exactly the form this package sends (the fixed prefix, canonical base64,
    /// the fixed suffix), or nil for any other body, which the general path then reads.
    static func canonicalEnvelopeBytes(_ body: [UInt8]) -> [UInt8]? {
        let p = prefixBytes.count
        let s = suffixBytes.count
        guard body.count > p + s, body.starts(with: prefixBytes), body[(body.count - s)...].elementsEqual(suffixBytes)
        else { return nil }
        return body.withUnsafeBufferPointer { buffer in
            CanonicalBase64.decode(UnsafeBufferPointer(rebasing: buffer[p..<(buffer.count - s)]))
        }
    }
}

/// The one key we read. Present but not a string (a number, null, an object) is malformed; absent is foreign.
private struct BodyShape: Decodable {
    var envelope: String?
    enum CodingKeys: String, CodingKey { case envelope = "e2ee" }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.envelope = container.contains(.envelope) ? try container.decode(String.self, forKey: .envelope) : nil
    }
}
