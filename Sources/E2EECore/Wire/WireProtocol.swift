/// The constants of protocol version 1 (docs/PROTOCOL.md). Changing any of them changes bytes on the wire.
public enum WireProtocol: Sendable {
    /// The envelope version byte.
    public static let version: UInt8 = 0x01
    /// Suite 0x0001 = HPKE DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20-Poly1305 + Ed25519 signatures.
    public static let suite: UInt16 = 0x0001

    /// The one custom top-level key of the APNs body; its value is the base64 envelope.
    public static let payloadKey = "e2ee"
    /// The neutral placeholder shown only if the device never replaces it. Identical for every message.
    public static let placeholderTitle = "New message"
    public static let placeholderBody = "Open the app to view it."

    /// APNs' limit for an `alert` push body.
    public static let apnsMaximumBodyLength = 4096

    /// The padded inner-plaintext sizes ("buckets"). Every message is padded (ISO/IEC 7816-4, `sodium_pad`) to
    /// the smallest bucket strictly larger than its unpadded length. 1,536 holds every call invite, cancel and
    /// receipt of ordinary size and a text of about 1 KB (all give APNs bodies of 2,233 bytes); 2,932 is the
    /// largest plaintext whose APNs body (4,093 bytes) fits APNs' 4,096-byte limit.
    public static let paddingBuckets: [Int] = [1536, 2932]

    /// The byte length of the APNs body for each bucket.
    public static func bodyLength(forBucket bucket: Int) -> Int {
        bodyPrefix.utf8.count + bodySuffix.utf8.count + 4 * ((Envelope.headerLength + bucket + 16 + 2) / 3)
    }

    /// The body bytes before the base64 envelope.
    static let bodyPrefix =
        "{\"aps\":{\"alert\":{\"title\":\"\(placeholderTitle)\",\"body\":\"\(placeholderBody)\"},\"mutable-content\":1},\"\(payloadKey)\":\""
    /// The body bytes after the base64 envelope.
    static let bodySuffix = "\"}"

    /// HPKE `info`: "e2ee-push/v1" || 0x00 || version || suite || recipient key id.
    static func hpkeInfo(recipientKeyID: KeyID) -> [UInt8] {
        Array("e2ee-push/v1".utf8) + [0x00, version] + HPKE.i2osp(suite) + recipientKeyID.bytes
    }

    /// The signature context: "e2ee-push/sig/v1" || 0x00.
    static let signatureContext: [UInt8] = Array("e2ee-push/sig/v1".utf8) + [0x00]
}
