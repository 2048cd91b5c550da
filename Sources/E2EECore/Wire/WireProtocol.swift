/// The constants of protocol version 1 (docs/PROTOCOL.md). Changing any of them changes bytes on the wire.
public enum WireProtocol: Sendable {
    /// The envelope version byte.
    public static let version: UInt8 = 0x01
    /// Suite 0x0001 = HPKE DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20-Poly1305 + Ed25519 signatures.
    public static let suite: UInt16 = 0x0001

    /// The padded inner-plaintext sizes ("buckets"). Every message is padded (ISO/IEC 7816-4, `sodium_pad`) to
    /// the smallest bucket strictly larger than its unpadded length. 1,536 holds every call invite, cancel and
    /// receipt of ordinary size and a text of about 1 KB (all give APNs bodies of 2,233 bytes); 2,932 is the
    /// largest plaintext whose APNs body (4,093 bytes) fits APNs' 4,096-byte limit. The APNs body and its limit
    /// are the APNs transport's (`APNsAlertTransport` in the PushTransport library), not this module's.
    public static let paddingBuckets: [Int] = [1536, 2932]

    /// HPKE `info`: "e2ee-push/v1" || 0x00 || version || suite || recipient key id.
    static func hpkeInfo(recipientKeyID: KeyID) -> [UInt8] {
        Array("e2ee-push/v1".utf8) + [0x00, version] + HPKE.i2osp(suite) + recipientKeyID.bytes
    }

    /// The signature context: "e2ee-push/sig/v1" || 0x00.
    static let signatureContext: [UInt8] = Array("e2ee-push/sig/v1".utf8) + [0x00]
}
