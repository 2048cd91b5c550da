// e2ee-bench: the cost of E2EECore's crypto against the libsodium floor and swift-crypto, measured in one run.
//
//   swift run --package-path Benchmarks -c release e2ee-bench [--batches N] [--batch-ms MS] [--quick]
//
// See docs/BENCHMARKS.md for what each line measures and the figures measured so far.
import Crypto
import E2EECore
import Foundation
import PushTransport

var settings = BenchSettings()
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick":
        settings.batches = 5
        settings.batchTargetNanoseconds = 5_000_000
    case "--batches":
        guard let value = arguments.popFirst().flatMap(Int.init), value > 0 else { fatalError("--batches N") }
        settings.batches = value
    case "--profile":
        guard let id = arguments.popFirst(), let count = arguments.popFirst().flatMap(Int.init), count > 0 else {
            fatalError("--profile ID N (IDs are printed by --profile list 1)")
        }
        settings.profile = (id, count)
    case "--batch-ms":
        guard let value = arguments.popFirst().flatMap(UInt64.init), value > 0 else { fatalError("--batch-ms MS") }
        settings.batchTargetNanoseconds = value * 1_000_000
    default:
        FileHandle.standardError.write(
            Data("usage: e2ee-bench [--batches N] [--batch-ms MS] [--quick] [--profile ID N]\n".utf8)
        )
        exit(2)
    }
}

let scenario = try Scenario()
let raw = RawHPKE()
let suite = Crypto.HPKE.Ciphersuite.Curve25519_SHA256_ChachaPoly
let small = (0..<64).map { UInt8(truncatingIfNeeded: $0) }
let large = (0..<1536).map { UInt8(truncatingIfNeeded: $0 &* 7) }
let info = scenario.info
let aad = scenario.header
let infoData = Data(info)
let aadData = Data(aad)

var table = ResultTable()
print(
    "e2ee-bench: \(settings.batches) batches of ~\(settings.batchTargetNanoseconds / 1_000_000) ms per line, median ns/op of thread CPU time"
)
print(machineDescription())
print("")

// MARK: raw libsodium primitives (the floor's parts)

do {
    var out = [UInt8](repeating: 0, count: 32)
    let peer = scenario.sealed.envelope.encapsulatedKey
    let hmacKey = [UInt8](repeating: 0x0b, count: 32)
    let hmacMessage = [UInt8](repeating: 0x5a, count: 45)
    var ct64 = [UInt8](repeating: 0, count: 64 + 16)
    var ct1536 = [UInt8](repeating: 0, count: 1536 + 16)
    var pt = [UInt8](repeating: 0, count: 1536)
    let key = [UInt8](repeating: 0x42, count: 32)
    let nonce = [UInt8](repeating: 0x24, count: 12)
    _ = RawPrimitives.chachaSeal(&ct64, key: key, nonce: nonce, plaintext: small)
    _ = RawPrimitives.chachaSeal(&ct1536, key: key, nonce: nonce, plaintext: large)
    let padded = [UInt8](repeating: 0x11, count: 200) + [0x80] + [UInt8](repeating: 0, count: 1335)
    let results = measureInterleaved(
        "primitives",
        [
            Workload(name: "X25519 scalarmult") {
                blackHole(RawPrimitives.x25519(&out, secret: scenario.recipientSecret, publicKey: peer))
            },
            Workload(name: "HMAC-SHA256 (32 B key, 45 B msg)") {
                blackHole(RawPrimitives.hmac(&out, key: hmacKey, message: hmacMessage))
            },
            Workload(name: "HPKE key schedule: \(RawHPKE.hmacCallsPerSetup) HMACs") {
                raw.keySchedule(info: info)
                blackHole(raw.key)
            },
            Workload(name: "ChaCha20-Poly1305 seal 64 B") {
                blackHole(RawPrimitives.chachaSeal(&ct64, key: key, nonce: nonce, plaintext: small))
            },
            Workload(name: "ChaCha20-Poly1305 open 64 B") {
                blackHole(RawPrimitives.chachaOpen(&pt, key: key, nonce: nonce, ciphertext: ct64))
            },
            Workload(name: "ChaCha20-Poly1305 seal 1536 B") {
                blackHole(RawPrimitives.chachaSeal(&ct1536, key: key, nonce: nonce, plaintext: large))
            },
            Workload(name: "ChaCha20-Poly1305 open 1536 B") {
                blackHole(RawPrimitives.chachaOpen(&pt, key: key, nonce: nonce, ciphertext: ct1536))
            },
            Workload(name: "sodium_unpad 1536 B") {
                blackHole(RawPrimitives.unpad(padded, blockSize: 1536))
            },
        ],
        settings: settings
    )
    table.section("libsodium primitives (raw C calls, the floor's parts)")
    for result in results { table.row(result.name, floor: result.median) }
}

// MARK: Ed25519

do {
    let message = scenario.signedMessage
    let messageData = Data(message)
    let ourSignature = try scenario.signingKey.signature(for: message)
    let ourPublic = scenario.signingKey.publicKey
    var rawSignature = [UInt8](repeating: 0, count: 64)
    _ = RawPrimitives.ed25519Sign(&rawSignature, secretKey: scenario.rawSigning.secretKey, message: message)
    let cryptoSignature = try scenario.cryptoSigning.signature(for: messageData)
    let cryptoPublic = scenario.cryptoSigning.publicKey
    precondition(ourPublic.isValidSignature(ourSignature, for: message))
    precondition(cryptoPublic.isValidSignature(cryptoSignature, for: messageData))
    let r = measureInterleaved(
        "ed25519",
        [
            Workload(name: "ours sign") { blackHole(try? scenario.signingKey.signature(for: message)) },
            Workload(name: "raw sign") {
                blackHole(
                    RawPrimitives.ed25519Sign(&rawSignature, secretKey: scenario.rawSigning.secretKey, message: message)
                )
            },
            Workload(name: "swift-crypto sign") { blackHole(try? scenario.cryptoSigning.signature(for: messageData)) },
            Workload(name: "ours verify") { blackHole(ourPublic.isValidSignature(ourSignature, for: message)) },
            Workload(name: "raw verify") {
                blackHole(
                    RawPrimitives.ed25519Verify(
                        signature: rawSignature,
                        message: message,
                        publicKey: scenario.rawSigning.publicKey
                    )
                )
            },
            Workload(name: "swift-crypto verify") {
                blackHole(cryptoPublic.isValidSignature(cryptoSignature, for: messageData))
            },
        ],
        settings: settings
    )
    table.section("Ed25519 (\(message.count)-byte message: the envelope's signed bytes)")
    table.row("Ed25519 sign", ours: r[0].median, floor: r[1].median, swiftCrypto: r[2].median)
    table.row("Ed25519 verify", ours: r[3].median, floor: r[4].median, swiftCrypto: r[5].median)
}

// MARK: HPKE single-shot, base mode

for (label, plaintext) in [("64 B", small), ("1536 B", large)] {
    let plaintextData = Data(plaintext)
    let recipientPublic = scenario.recipient.publicKey
    // One ciphertext per library to open (each library opens its own and the others'; all are the same suite).
    let ours = try E2EECore.HPKE.seal(plaintext, to: recipientPublic, info: info, aad: aad)
    var cryptoSender = try Crypto.HPKE.Sender(
        recipientKey: scenario.cryptoRecipient.publicKey,
        ciphersuite: suite,
        info: infoData
    )
    let cryptoCiphertext = try cryptoSender.seal(plaintextData, authenticating: aadData)
    let cryptoEnc = cryptoSender.encapsulatedKey
    var rawPlaintext = [UInt8](repeating: 0, count: plaintext.count)
    var rawCiphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
    precondition(
        raw.open(
            ciphertext: ours.ciphertext,
            enc: ours.encapsulatedKey,
            recipientSecret: scenario.recipientSecret,
            recipientPublic: scenario.recipientPublic,
            info: info,
            aad: aad,
            plaintext: &rawPlaintext
        )
            && rawPlaintext == plaintext
    )
    let r = measureInterleaved(
        "hpke-\(plaintext.count)",
        [
            Workload(name: "ours seal") {
                blackHole(try? E2EECore.HPKE.seal(plaintext, to: recipientPublic, info: info, aad: aad))
            },
            Workload(name: "floor seal") {
                raw.seal(
                    plaintext: plaintext,
                    recipientPublic: scenario.recipientPublic,
                    info: info,
                    aad: aad,
                    ciphertext: &rawCiphertext
                )
            },
            Workload(name: "swift-crypto seal") {
                var sender = try! Crypto.HPKE.Sender(
                    recipientKey: scenario.cryptoRecipient.publicKey,
                    ciphersuite: suite,
                    info: infoData
                )
                blackHole(try? sender.seal(plaintextData, authenticating: aadData))
            },
            Workload(name: "ours open") {
                blackHole(
                    try? E2EECore.HPKE.open(
                        ours.ciphertext,
                        encapsulatedKey: ours.encapsulatedKey,
                        recipient: scenario.recipient,
                        info: info,
                        aad: aad
                    )
                )
            },
            Workload(name: "floor open") {
                blackHole(
                    raw.open(
                        ciphertext: ours.ciphertext,
                        enc: ours.encapsulatedKey,
                        recipientSecret: scenario.recipientSecret,
                        recipientPublic: scenario.recipientPublic,
                        info: info,
                        aad: aad,
                        plaintext: &rawPlaintext
                    )
                )
            },
            Workload(name: "swift-crypto open") {
                var recipient = try! Crypto.HPKE.Recipient(
                    privateKey: scenario.cryptoRecipient,
                    ciphersuite: suite,
                    info: infoData,
                    encapsulatedKey: cryptoEnc
                )
                blackHole(try? recipient.open(cryptoCiphertext, authenticating: aadData))
            },
        ],
        settings: settings
    )
    table.section("HPKE single-shot, base mode, \(label) plaintext, \(info.count) B info, \(aad.count) B aad")
    table.row("HPKE seal \(label)", ours: r[0].median, floor: r[1].median, swiftCrypto: r[2].median)
    table.row("HPKE open \(label)", ours: r[3].median, floor: r[4].median, swiftCrypto: r[5].median)
    if label == "1536 B" { table.target("our HPKE open <= swift-crypto's (1536 B)", r[3].median / r[5].median, 1.0) }
    if label == "64 B" { table.target("our HPKE open <= swift-crypto's (64 B)", r[3].median / r[5].median, 1.0) }
}

// MARK: whole envelope

do {
    let body = scenario.sealed.apnsBody
    let envelope = scenario.sealed.envelope
    let signingPublic = scenario.signingKey.publicKey
    let recipient = scenario.device
    let keyID = envelope.recipientKeyID
    let deviceKey: (KeyID) -> DevicePrivateKey? = { $0 == keyID ? recipient : nil }
    let signingKeyLookup: (String, KeyID) -> SigningPublicKey? = { _, _ in signingPublic }
    let opened = try PushPayload.open(body: body, deviceKey: deviceKey, signingKey: signingKeyLookup)
    precondition(opened.message == scenario.message)

    let bucket = scenario.bucket
    var padded = [UInt8](repeating: 0, count: bucket)
    var verifyBuffer = [UInt8](repeating: 0, count: scenario.signedMessage.count)
    let signedPrefix = Scenario.signatureContext + scenario.header
    let signerPublic = scenario.signingKey.publicKey.rawRepresentation
    // Envelope open floor: 1 X25519 + 8 HMACs + ChaCha open of the bucket + sodium_unpad + assembling the signed
    // bytes (one memcpy) + 1 Ed25519 verify.
    func floorOpen() -> Bool {
        guard
            raw.open(
                ciphertext: envelope.ciphertext,
                enc: envelope.encapsulatedKey,
                recipientSecret: scenario.recipientSecret,
                recipientPublic: scenario.recipientPublic,
                info: info,
                aad: aad,
                plaintext: &padded
            )
        else { return false }
        let length = RawPrimitives.unpad(padded, blockSize: bucket)
        guard length > 64 else { return false }
        let signedLength = length - 64
        verifyBuffer.withUnsafeMutableBufferPointer { v in
            signedPrefix.withUnsafeBufferPointer { v.baseAddress!.update(from: $0.baseAddress!, count: $0.count) }
            padded.withUnsafeBufferPointer {
                (v.baseAddress! + signedPrefix.count).update(from: $0.baseAddress!, count: signedLength)
            }
        }
        return padded.withUnsafeBufferPointer { p in
            RawPrimitives.ed25519Verify(
                signature: Array(UnsafeBufferPointer(rebasing: p[signedLength..<length])),
                message: verifyBuffer,
                publicKey: signerPublic
            ) == 0
        }
    }
    precondition(floorOpen(), "the envelope open floor must verify")

    // Envelope seal floor: random ephemeral + X25519 base + X25519 + 8 HMACs + Ed25519 sign + sodium_pad +
    // ChaCha seal of the bucket.
    var sealBuffer = [UInt8](repeating: 0, count: bucket)
    var sealCiphertext = [UInt8](repeating: 0, count: bucket + 16)
    var signature = [UInt8](repeating: 0, count: 64)
    let signedPart = Array(scenario.signedMessage[signedPrefix.count...])
    func floorSeal() {
        _ = RawPrimitives.ed25519Sign(
            &signature,
            secretKey: scenario.rawSigning.secretKey,
            message: scenario.signedMessage
        )
        sealBuffer.withUnsafeMutableBufferPointer { b in
            signedPart.withUnsafeBufferPointer { b.baseAddress!.update(from: $0.baseAddress!, count: $0.count) }
            signature.withUnsafeBufferPointer {
                (b.baseAddress! + signedPart.count).update(from: $0.baseAddress!, count: 64)
            }
        }
        _ = RawPrimitives.pad(&sealBuffer, unpaddedLength: signedPart.count + 64, blockSize: bucket)
        raw.seal(
            plaintext: sealBuffer,
            recipientPublic: scenario.recipientPublic,
            info: info,
            aad: aad,
            ciphertext: &sealCiphertext
        )
    }

    let r = measureInterleaved(
        "envelope",
        [
            Workload(name: "ours seal") {
                blackHole(
                    try? PushPayload.seal(scenario.message, to: recipient.publicKey, signingKey: scenario.signingKey)
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
            Workload(name: "ours parse body") { blackHole(try? APNsAlertTransport.envelope(fromBody: body)) },
        ],
        settings: settings
    )
    table.section("whole envelope: call invite, \(bucket)-byte bucket, \(body.count)-byte APNs body")
    table.row("PushPayload.seal", ours: r[0].median, floor: r[1].median)
    table.row("PushPayload.open(body:)", ours: r[2].median, floor: r[4].median)
    table.row("PushPayload.open(envelope)", ours: r[3].median, floor: r[4].median)
    table.row("APNsAlertTransport.envelope(fromBody:)", ours: r[5].median)
    table.target("envelope open (body) <= 1.25x floor", r[2].median / r[4].median, 1.25)
    table.target("envelope open (parsed) <= 1.25x floor", r[3].median / r[4].median, 1.25)
}

if settings.profile == nil { table.print() }
