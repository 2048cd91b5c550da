import Crypto
import Foundation
import Testing

@testable import E2EECore

/// Interoperability with swift-crypto's `HPKE` (the same API as CryptoKit on iOS 17+), suite
/// `.Curve25519_SHA256_ChachaPoly`, in all four modes and both directions, with exports.
@Suite("HPKE interop with swift-crypto")
struct SwiftCryptoInteropTests {
    /// The HPKE mode under test, with the key material both sides need.
    enum Mode: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case base
        case psk
        case auth
        case authPSK

        var isAuth: Bool { self == .auth || self == .authPSK }
        var hasPSK: Bool { self == .psk || self == .authPSK }
        var testDescription: String { self.rawValue }
    }

    /// Fresh keys and inputs for one exchange; the sender's and the recipient's keys exist in both libraries.
    struct Material {
        let mode: Mode
        let recipient = Curve25519.KeyAgreement.PrivateKey()
        let sender = Curve25519.KeyAgreement.PrivateKey()
        let pskBytes = Array(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
        let pskID = Array("interop psk id".utf8)
        let info = Array("e2ee-push interop info".utf8)

        /// Messages of several sizes (empty, one byte, a 1,536-byte bucket, a short text) with their aad.
        let messages: [(plaintext: [UInt8], aad: [UInt8])] = [
            ([], []),
            ([0x00], Array("aad-1".utf8)),
            ((0..<1536).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }, Array(repeating: 0xAB, count: 43)),
            (Array("ring ring".utf8), []),
        ]
        /// Exporter contexts and lengths checked on both sides.
        let exports: [(context: [UInt8], length: Int)] = [([], 32), ([0x00], 1), (Array("TestContext".utf8), 64)]

        init(_ mode: Mode) { self.mode = mode }

        var ourRecipient: X25519PrivateKey {
            get throws { try X25519PrivateKey(secret: SecureBytes(copying: self.recipient.rawRepresentation)) }
        }
        var ourSender: X25519PrivateKey? {
            get throws {
                self.mode.isAuth
                    ? try X25519PrivateKey(secret: SecureBytes(copying: self.sender.rawRepresentation)) : nil
            }
        }
        var ourSenderPublicKey: X25519PublicKey? {
            get throws {
                self.mode.isAuth ? try X25519PublicKey(rawRepresentation: self.sender.publicKey.rawRepresentation) : nil
            }
        }
        var ourPSK: E2EECore.HPKE.PreSharedKey? {
            self.mode.hasPSK
                ? E2EECore.HPKE.PreSharedKey(key: SecureBytes(copying: self.pskBytes), id: self.pskID) : nil
        }

        func cryptoSender() throws -> Crypto.HPKE.Sender {
            let suite = Crypto.HPKE.Ciphersuite.Curve25519_SHA256_ChachaPoly
            let pk = self.recipient.publicKey
            let info = Data(self.info)
            let psk = SymmetricKey(data: self.pskBytes)
            switch self.mode {
            case .base:
                return try Crypto.HPKE.Sender(recipientKey: pk, ciphersuite: suite, info: info)
            case .psk:
                return try Crypto.HPKE.Sender(
                    recipientKey: pk,
                    ciphersuite: suite,
                    info: info,
                    presharedKey: psk,
                    presharedKeyIdentifier: Data(self.pskID)
                )
            case .auth:
                return try Crypto.HPKE.Sender(
                    recipientKey: pk,
                    ciphersuite: suite,
                    info: info,
                    authenticatedBy: self.sender
                )
            case .authPSK:
                return try Crypto.HPKE.Sender(
                    recipientKey: pk,
                    ciphersuite: suite,
                    info: info,
                    authenticatedBy: self.sender,
                    presharedKey: psk,
                    presharedKeyIdentifier: Data(self.pskID)
                )
            }
        }

        func cryptoRecipient(encapsulatedKey: [UInt8], info: [UInt8]? = nil) throws -> Crypto.HPKE.Recipient {
            let suite = Crypto.HPKE.Ciphersuite.Curve25519_SHA256_ChachaPoly
            let enc = Data(encapsulatedKey)
            let info = Data(info ?? self.info)
            let psk = SymmetricKey(data: self.pskBytes)
            switch self.mode {
            case .base:
                return try Crypto.HPKE.Recipient(
                    privateKey: self.recipient,
                    ciphersuite: suite,
                    info: info,
                    encapsulatedKey: enc
                )
            case .psk:
                return try Crypto.HPKE.Recipient(
                    privateKey: self.recipient,
                    ciphersuite: suite,
                    info: info,
                    encapsulatedKey: enc,
                    presharedKey: psk,
                    presharedKeyIdentifier: Data(self.pskID)
                )
            case .auth:
                return try Crypto.HPKE.Recipient(
                    privateKey: self.recipient,
                    ciphersuite: suite,
                    info: info,
                    encapsulatedKey: enc,
                    authenticatedBy: self.sender.publicKey
                )
            case .authPSK:
                return try Crypto.HPKE.Recipient(
                    privateKey: self.recipient,
                    ciphersuite: suite,
                    info: info,
                    encapsulatedKey: enc,
                    authenticatedBy: self.sender.publicKey,
                    presharedKey: psk,
                    presharedKeyIdentifier: Data(self.pskID)
                )
            }
        }
    }

    static func bytes(_ key: SymmetricKey) -> [UInt8] { key.withUnsafeBytes { Array($0) } }

    @Test("swift-crypto's HPKE.Recipient opens our SenderContext's messages; exports agree", arguments: Mode.allCases)
    func cryptoOpensOurs(mode: Mode) throws {
        let m = Material(mode)
        var ours = try E2EECore.HPKE.SenderContext(
            recipient: X25519PublicKey(rawRepresentation: m.recipient.publicKey.rawRepresentation),
            info: m.info,
            sender: m.ourSender,
            psk: m.ourPSK
        )
        #expect(ours.encapsulatedKey.count == 32)
        let ciphertexts = try m.messages.map { try ours.seal($0.plaintext, authenticating: $0.aad) }

        var theirs = try m.cryptoRecipient(encapsulatedKey: ours.encapsulatedKey)
        var opened = 0
        for (index, (message, ciphertext)) in zip(m.messages, ciphertexts).enumerated() {
            #expect(ciphertext.count == message.plaintext.count + 16)
            let plaintext = try theirs.open(Data(ciphertext), authenticating: Data(message.aad))
            #expect(Array(plaintext) == message.plaintext, "message \(index)")
            opened += 1
        }
        #expect(opened == m.messages.count)
        for export in m.exports {
            let mine = try ours.exportSecret(context: export.context, length: export.length).bytesForTesting
            let theirsValue = try theirs.exportSecret(context: Data(export.context), outputByteCount: export.length)
            #expect(mine.count == export.length)
            #expect(mine == Self.bytes(theirsValue), "export length \(export.length)")
        }

        // The same enc with another info must not open: the key schedule binds info.
        var wrongInfo = try m.cryptoRecipient(encapsulatedKey: ours.encapsulatedKey, info: m.info + [0x01])
        #expect(throws: (any Error).self) {
            try wrongInfo.open(Data(ciphertexts[0]), authenticating: Data(m.messages[0].aad))
        }
    }

    @Test("our RecipientContext opens swift-crypto's HPKE.Sender messages; exports agree", arguments: Mode.allCases)
    func oursOpensCrypto(mode: Mode) throws {
        let m = Material(mode)
        var theirs = try m.cryptoSender()
        let ciphertexts = try m.messages.map {
            Array(try theirs.seal(Data($0.plaintext), authenticating: Data($0.aad)))
        }

        var ours = try E2EECore.HPKE.RecipientContext(
            encapsulatedKey: Array(theirs.encapsulatedKey),
            recipient: m.ourRecipient,
            info: m.info,
            senderPublicKey: m.ourSenderPublicKey,
            psk: m.ourPSK
        )
        var opened = 0
        for (index, (message, ciphertext)) in zip(m.messages, ciphertexts).enumerated() {
            let plaintext = try ours.open(ciphertext, authenticating: message.aad)
            #expect(plaintext.bytesForTesting == message.plaintext, "message \(index)")
            opened += 1
        }
        #expect(opened == m.messages.count)
        for export in m.exports {
            let mine = try ours.exportSecret(context: export.context, length: export.length).bytesForTesting
            let theirsValue = try theirs.exportSecret(context: Data(export.context), outputByteCount: export.length)
            #expect(mine == Self.bytes(theirsValue), "export length \(export.length)")
        }

        // Authentication is real: in the auth modes another sender key must not open; in the others, claiming a
        // sender (auth mode) where there was none must not either.
        let otherSender = X25519PrivateKey.generate().publicKey
        var wrong = try E2EECore.HPKE.RecipientContext(
            encapsulatedKey: Array(theirs.encapsulatedKey),
            recipient: m.ourRecipient,
            info: m.info,
            senderPublicKey: otherSender,
            psk: m.ourPSK
        )
        #expect(throws: E2EEError(.openFailed, "")) {
            try wrong.open(ciphertexts[0], authenticating: m.messages[0].aad)
        }
    }

    @Test(
        "single-shot: our HPKE.seal opens in swift-crypto and swift-crypto's seal opens in HPKE.open",
        arguments: Mode.allCases
    )
    func singleShot(mode: Mode) throws {
        let m = Material(mode)
        let message = m.messages[2]
        let (enc, ciphertext) = try E2EECore.HPKE.seal(
            message.plaintext,
            to: X25519PublicKey(rawRepresentation: m.recipient.publicKey.rawRepresentation),
            info: m.info,
            aad: message.aad,
            sender: m.ourSender,
            psk: m.ourPSK
        )
        var theirsRecipient = try m.cryptoRecipient(encapsulatedKey: enc)
        #expect(
            Array(try theirsRecipient.open(Data(ciphertext), authenticating: Data(message.aad))) == message.plaintext
        )

        var theirsSender = try m.cryptoSender()
        let theirCiphertext = try theirsSender.seal(Data(message.plaintext), authenticating: Data(message.aad))
        let opened = try E2EECore.HPKE.open(
            Array(theirCiphertext),
            encapsulatedKey: Array(theirsSender.encapsulatedKey),
            recipient: m.ourRecipient,
            info: m.info,
            aad: message.aad,
            senderPublicKey: m.ourSenderPublicKey,
            psk: m.ourPSK
        )
        #expect(opened.bytesForTesting == message.plaintext)
    }
}
