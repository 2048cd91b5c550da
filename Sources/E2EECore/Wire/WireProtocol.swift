/// The constants of protocol version 1 (docs/PROTOCOL.md). Changing any of them changes bytes on the wire.
///
/// What depends on the crypto suite (the header length, `enc`, the device keys) comes from ``CryptoSuite``; what
/// depends on the transport too (the padding buckets) from its ``PaddingTable``.
public enum WireProtocol: Sendable {
    /// The envelope version byte.
    public static let version: UInt8 = 0x01

    /// HPKE `info`: "e2ee-push/v1" || 0x00 || version || suite || recipient key id.
    static func hpkeInfo(suite: CryptoSuite, recipientKeyID: KeyID) -> [UInt8] {
        Array("e2ee-push/v1".utf8) + [0x00, version] + HPKE.i2osp(suite.id) + recipientKeyID.bytes
    }

    /// The signature context: "e2ee-push/sig/v1" || 0x00.
    static let signatureContext: [UInt8] = Array("e2ee-push/sig/v1".utf8) + [0x00]
}
