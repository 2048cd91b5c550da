@_spi(Vectors) import E2EECore
import E2EETestVectors
import Foundation
import PushTransport
import Testing

/// The crypto suite as a value (docs/PROTOCOL.md §5, §6): the parse order reads the suite before the header length
/// it implies, and the padding buckets are the transport's table per suite.
@Suite("Crypto suite seam")
struct SuiteSeamTests {
    let padding = APNsAlertTransport.padding

    @Test("an unknown suite is reported as such even when the envelope is shorter than a classical header")
    func unknownSuiteBeforeLength() throws {
        // version 1, suite 0x0003, then 2 bytes: the suite decides the header length, so it is read first.
        #expect(throws: E2EEError(.unsupportedSuite, "")) {
            try Envelope(parsing: [0x01, 0x00, 0x03, 0xAA, 0xBB], padding: self.padding)
        }
        #expect(throws: E2EEError(.malformedEnvelope, "")) {
            try Envelope(parsing: [0x01, 0x00], padding: self.padding)
        }
        #expect(throws: E2EEError(.malformedEnvelope, "")) {
            try Envelope(parsing: [0x01, 0x00, 0x01] + [UInt8](repeating: 0, count: 39), padding: self.padding)
        }
    }

    @Test("sealing and parsing take the transport's buckets: another table gives other sizes, and refuses APNs'")
    func paddingTableIsTheTransports() throws {
        let keys = ProjectVectors.keys()
        let message = InnerMessage(
            messageID: .random(),
            sentAtMs: ProjectVectors.baseTimeMs,
            senderUserID: keys.sender.userID,
            senderSigningKeyID: keys.sender.signingKey.publicKey.keyID,
            content: .text(TextMessage(threadID: "t", title: "x", body: "y"))
        )
        let small = PaddingTable([.classical: [256, 512]])
        let recipient = keys.recipient.currentDeviceKey.privateKey.publicKey
        let sealed = try PushPayload.seal(message, to: recipient, signingKey: keys.sender.signingKey, padding: small)
        #expect(sealed.bucket == 256)
        #expect(sealed.envelope.serialized.count == 43 + 256 + 16)
        #expect(try Envelope(parsing: sealed.envelope.serialized, padding: small) == sealed.envelope)
        #expect(throws: E2EEError(.malformedEnvelope, "")) {
            try Envelope(parsing: sealed.envelope.serialized, padding: self.padding)
        }
        // A transport without buckets for a suite does not carry it.
        #expect(throws: E2EEError(.invalidArgument, "")) {
            try PushPayload.seal(message, to: recipient, signingKey: keys.sender.signingKey, padding: PaddingTable([:]))
        }
    }
}
