import Crypto
import E2EECore
import Foundation
import PushTransport

/// The X-Wing suite's envelope (docs/PROTOCOL.md §16) against its floor, measured in the same run as the classical
/// one: swift-crypto's X-Wing decapsulation (encapsulation to seal), AES-256-GCM of the same sizes under a fixed
/// key, ISO 7816-4 unpadding (padding) and the same Ed25519 verify (sign) of the same signed bytes on libsodium.
/// What the floor leaves out is what the project adds: the HPKE key schedule, parsing, the inner message decoder.
func benchXWingEnvelope(_ scenario: Scenario, _ table: inout ResultTable, _ settings: BenchSettings) throws {
    let device = DevicePrivateKey.generate(suite: .xwing)
    let sealed = try PushPayload.seal(scenario.message, to: device.publicKey, signingKey: scenario.signingKey)
    let envelope = sealed.envelope
    let body = sealed.apnsBody
    let keyID = envelope.recipientKeyID
    let signingPublic = scenario.signingKey.publicKey
    let deviceKey: (KeyID) -> DevicePrivateKey? = { $0 == keyID ? device : nil }
    let signingKeyLookup: (String, KeyID) -> SigningPublicKey? = { _, _ in signingPublic }
    let opened = try PushPayload.open(body: body, deviceKey: deviceKey, signingKey: signingKeyLookup)
    precondition(opened.message == scenario.message, "the X-Wing envelope must open to its message")

    // The library's key of the same seed, expanded once (as the device's is), and the envelope's plaintext, taken
    // with swift-crypto's HPKE so the floor verifies the very signed bytes the envelope carries.
    let seed = SymmetricKey(size: .bits256)
    let libraryKey = try XWingMLKEM768X25519.PrivateKey(
        seedRepresentation: seed.withUnsafeBytes { Array($0) },
        publicKey: nil
    )
    let header = Array(envelope.serialized.prefix(envelope.headerLength))
    // Floor inputs: a valid X-Wing ciphertext to the library key, and an AES-GCM box of the envelope's size.
    let encapsulation = try libraryKey.publicKey.encapsulate()
    let enc = encapsulation.encapsulated
    let aesKey = SymmetricKey(size: .bits256)
    let nonce = try AES.GCM.Nonce(data: Array(repeating: 7, count: 12))
    let bucket = sealed.bucket
    var padded = [UInt8](repeating: 0, count: bucket)
    let signedPart = Array(scenario.signedMessage[(Scenario.signatureContext.count + 43)...])
    let signedMessage = Scenario.signatureContext + header + signedPart
    var signature = [UInt8](repeating: 0, count: 64)
    _ = RawPrimitives.ed25519Sign(&signature, secretKey: scenario.rawSigning.secretKey, message: signedMessage)
    padded.replaceSubrange(0..<signedPart.count, with: signedPart)
    padded.replaceSubrange(signedPart.count..<signedPart.count + 64, with: signature)
    _ = RawPrimitives.pad(&padded, unpaddedLength: signedPart.count + 64, blockSize: bucket)
    let box = try AES.GCM.seal(padded, using: aesKey, nonce: nonce, authenticating: header)
    let rawPublic = scenario.rawSigning.publicKey

    func floorOpen() -> Bool {
        guard (try? libraryKey.decapsulate(enc)) != nil,
            let plaintext = try? AES.GCM.open(box, using: aesKey, authenticating: header)
        else { return false }
        let bytes = Array(plaintext)
        let length = RawPrimitives.unpad(bytes, blockSize: bucket)
        guard length > 64 else { return false }
        let message = Scenario.signatureContext + header + bytes[0..<(length - 64)]
        return RawPrimitives.ed25519Verify(
            signature: Array(bytes[(length - 64)..<length]),
            message: message,
            publicKey: rawPublic
        ) == 0
    }
    precondition(floorOpen(), "the X-Wing open floor must verify")
    var sealSignature = [UInt8](repeating: 0, count: 64)
    var sealBuffer = [UInt8](repeating: 0, count: bucket)
    func floorSeal() {
        blackHole(try? libraryKey.publicKey.encapsulate())
        _ = RawPrimitives.ed25519Sign(&sealSignature, secretKey: scenario.rawSigning.secretKey, message: signedMessage)
        sealBuffer.withUnsafeMutableBufferPointer { b in
            signedPart.withUnsafeBufferPointer { b.baseAddress!.update(from: $0.baseAddress!, count: $0.count) }
            sealSignature.withUnsafeBufferPointer {
                (b.baseAddress! + signedPart.count).update(from: $0.baseAddress!, count: 64)
            }
        }
        _ = RawPrimitives.pad(&sealBuffer, unpaddedLength: signedPart.count + 64, blockSize: bucket)
        blackHole(try? AES.GCM.seal(sealBuffer, using: aesKey, nonce: nonce, authenticating: header))
    }

    let r = measureInterleaved(
        "xwing envelope",
        [
            Workload(name: "ours seal") {
                blackHole(
                    try? PushPayload.seal(scenario.message, to: device.publicKey, signingKey: scenario.signingKey)
                )
            },
            Workload(name: "floor seal") { floorSeal() },
            Workload(name: "ours open body") {
                blackHole(try? PushPayload.open(body: body, deviceKey: deviceKey, signingKey: signingKeyLookup))
            },
            Workload(name: "ours open envelope") {
                blackHole(try? PushPayload.open(envelope, deviceKey: deviceKey, signingKey: signingKeyLookup))
            },
            Workload(name: "floor open") { blackHole(floorOpen()) },
        ],
        settings: settings
    )
    table.section("X-Wing envelope (suite 0x0002): call invite, \(bucket)-byte bucket, \(body.count)-byte APNs body")
    table.row("PushPayload.seal (X-Wing)", ours: r[0].median, floor: r[1].median)
    table.row("PushPayload.open(body:) (X-Wing)", ours: r[2].median, floor: r[4].median)
    table.row("PushPayload.open(envelope) (X-Wing)", ours: r[3].median, floor: r[4].median)
    table.target("X-Wing envelope open (body) <= 1.25x floor", r[2].median / r[4].median, 1.25)
    table.target("X-Wing envelope open (parsed) <= 1.25x floor", r[3].median / r[4].median, 1.25)
}
