#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One input payload: its sequence number, its apns-id, and the APNs body bytes, or why it could not be read.
public struct PayloadInput: Sendable, Hashable {
    public var seq: Int64
    public var apnsID: String?
    /// The APNs body bytes, or nil when the line itself was not understood (`malformedReason` says why).
    public var body: [UInt8]?
    public var malformedReason: String?

    public init(seq: Int64, apnsID: String?, body: [UInt8]) {
        self.seq = seq
        self.apnsID = apnsID
        self.body = body
    }

    init(seq: Int64, apnsID: String?, malformed: String) {
        self.seq = seq
        self.apnsID = apnsID
        self.malformedReason = malformed
    }

    /// The largest input line read: a request line holds a ≤ 4 KB body JSON-escaped plus headers.
    public static let maximumLineLength = 64 * 1024

    /// Parses one input line: a request line as `e2ee-send` prints it (`{"device_token","headers","body"}`), a
    /// gateway spool record (`{"seq","apns_id","body",...}`), or a bare APNs body (`{"aps":...,"e2ee":...}`).
    ///
    /// - Parameter defaultSeq: the sequence number when the line carries none (its 1-based line number).
    /// - Returns: an input; a line that is not understood becomes an input with `malformedReason` (it still gets a
    ///   decision: `fallback`, reason `malformed-input`).
    public static func parse(line: [UInt8], defaultSeq: Int64) -> PayloadInput {
        guard line.count <= maximumLineLength else {
            return PayloadInput(seq: defaultSeq, apnsID: nil, malformed: "line longer than \(maximumLineLength) bytes")
        }
        guard let shape = try? JSONDecoder().decode(LineShape.self, from: Data(line)) else {
            return PayloadInput(seq: defaultSeq, apnsID: nil, malformed: "not a JSON object")
        }
        let seq = shape.seq ?? defaultSeq
        let apnsID = shape.apnsID ?? shape.headers?["apns-id"]
        if let body = shape.body {
            return PayloadInput(seq: seq, apnsID: apnsID, body: Array(body.utf8))
        }
        if let base64 = shape.bodyBase64 {
            guard let data = Data(base64Encoded: base64) else {
                return PayloadInput(seq: seq, apnsID: apnsID, malformed: "body_base64 is not base64")
            }
            return PayloadInput(seq: seq, apnsID: apnsID, body: Array(data))
        }
        if shape.isBareBody {
            return PayloadInput(seq: seq, apnsID: apnsID, body: line)
        }
        return PayloadInput(
            seq: seq,
            apnsID: apnsID,
            malformed: "neither a request line, a spool record nor an APNs body"
        )
    }
}

private struct LineShape: Decodable {
    var seq: Int64?
    var apnsID: String?
    var headers: [String: String]?
    var body: String?
    var bodyBase64: String?
    var isBareBody = false

    enum CodingKeys: String, CodingKey {
        case seq, headers, body, aps, e2ee
        case apnsID = "apns_id"
        case bodyBase64 = "body_base64"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.seq = try? c.decodeIfPresent(Int64.self, forKey: .seq)
        self.apnsID = try? c.decodeIfPresent(String.self, forKey: .apnsID)
        self.headers = try? c.decodeIfPresent([String: String].self, forKey: .headers)
        self.body = try? c.decodeIfPresent(String.self, forKey: .body)
        self.bodyBase64 = try? c.decodeIfPresent(String.self, forKey: .bodyBase64)
        self.isBareBody = c.contains(.aps) || c.contains(.e2ee)
    }
}
