// libFuzzer target: the clear-side parsers alone — APNs body JSON → base64 → envelope, and the inner-message
// decoder that runs on decrypted bytes (reached directly, since random bytes never pass the AEAD).
@_spi(Vectors) import E2EECore
import PushTransport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEnvelope(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // 1. As an APNs body (the APNs transport's framing).
    if let envelope = try? APNsAlertTransport.envelope(fromBody: bytes) {
        // Whatever parses must serialise back to the same envelope bytes.
        precondition((try? Envelope(parsing: envelope.serialized, padding: APNsAlertTransport.padding)) == envelope)
    }
    // 2. As raw envelope bytes.
    _ = try? Envelope(parsing: bytes, padding: APNsAlertTransport.padding)
    // 3. As a decrypted inner message (signed part + signature).
    if let (message, signedPart, signature) = try? InnerMessage.decode(bytes) {
        precondition(signedPart.count + signature.count == bytes.count)
        _ = message.kind.description
    }
    return 0
}
