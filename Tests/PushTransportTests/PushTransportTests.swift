import E2EECore
import Foundation
import Testing

@testable import PushTransport

/// A second push service for the tests only: a binary framing ("FAKE" magic, a 2-byte big-endian length, the
/// envelope bytes) with its own limit. It shows that another transport needs nothing from E2EECore beyond envelopes.
enum FakeBinaryTransport: PushTransport {
    static let name = "fake"
    static let maximumBodyLength = 3072
    static let magic = Array("FAKE".utf8)

    static func body(for envelope: Envelope) -> [UInt8] {
        let bytes = envelope.serialized
        return magic + [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
    }

    static func envelope(fromBody body: [UInt8]) throws(E2EEError) -> Envelope {
        guard body.count <= maximumBodyLength else {
            throw E2EEError(.tooLarge, "the fake body is \(body.count) bytes; it allows \(maximumBodyLength)")
        }
        guard body.starts(with: magic) else { throw E2EEError(.foreignPayload, "not a fake body") }
        guard body.count >= magic.count + 2,
            Int(body[magic.count]) << 8 | Int(body[magic.count + 1]) == body.count - magic.count - 2
        else { throw E2EEError(.malformedEnvelope, "the fake length does not match") }
        return try Envelope(parsing: Array(body[(magic.count + 2)...]), padding: padding)
    }

    /// APNs' buckets: their binary bodies (at most 2,997 bytes) fit this transport's limit too.
    static let padding = APNsAlertTransport.padding

    static func bodyLength(forBucket bucket: Int, suite: CryptoSuite) -> Int {
        magic.count + 2 + suite.headerLength + bucket + suite.tagLength
    }
}

@Suite("Push transports")
struct PushTransportTests {
    let recipient = DevicePrivateKey.generate()
    let sender = SigningPrivateKey.generate()

    func message(textLength: Int) -> InnerMessage {
        InnerMessage(
            messageID: .random(),
            sentAtMs: 1_800_000_000_000,
            senderUserID: "alice",
            senderSigningKeyID: self.sender.publicKey.keyID,
            content: .text(TextMessage(threadID: "t", title: "x", body: String(repeating: "a", count: textLength)))
        )
    }

    /// One sealed push per padding bucket (a short text and a long one).
    func sealedPerBucket() throws -> [SealedPush] {
        try [10, 2000].map { length in
            try PushPayload.seal(
                self.message(textLength: length),
                to: self.recipient.publicKey,
                signingKey: self.sender
            )
        }
    }

    func open<T: PushTransport>(_ body: [UInt8], _ transport: T.Type) throws(E2EEError) -> OpenedPush {
        try PushPayload.open(
            body: body,
            transport: transport,
            deviceKey: { $0 == self.recipient.publicKey.keyID ? self.recipient : nil },
            signingKey: { $1 == self.sender.publicKey.keyID ? self.sender.publicKey : nil }
        )
    }

    @Test("every padding bucket's APNs body fits 4,096 bytes and has the length bodyLength(forBucket:suite:) says")
    func bucketsFitAPNs() throws {
        #expect(APNsAlertTransport.name == "apns")
        #expect(APNsAlertTransport.maximumBodyLength == 4096)
        let buckets = APNsAlertTransport.padding.buckets(for: .classical)
        #expect(buckets == [1536, 2932])
        #expect(buckets.map { APNsAlertTransport.bodyLength(forBucket: $0, suite: .classical) } == [2233, 4093])
        let sealed = try self.sealedPerBucket()
        #expect(sealed.map(\.bucket) == buckets)
        for push in sealed {
            let body = push.apnsBody
            #expect(body.count <= APNsAlertTransport.maximumBodyLength)
            #expect(body.count == APNsAlertTransport.bodyLength(forBucket: push.bucket, suite: .classical))
            #expect(push.framedBody(APNsAlertTransport.self) == body)
            #expect(push.apnsBodyString == String(decoding: body, as: UTF8.self))
        }
    }

    @Test("body(for:) then envelope(fromBody:) gives the envelope back byte for byte, and the body opens")
    func apnsRoundTrip() throws {
        for push in try self.sealedPerBucket() {
            let body = APNsAlertTransport.body(for: push.envelope)
            #expect(try APNsAlertTransport.envelope(fromBody: body).serialized == push.envelope.serialized)
            #expect(try self.open(body, APNsAlertTransport.self).message == push.message)
            // The default transport of open(body:) is APNs.
            let opened = try PushPayload.open(
                body: body,
                deviceKey: { _ in self.recipient },
                signingKey: { _, _ in self.sender.publicKey }
            )
            #expect(opened.bucket == push.bucket)
        }
    }

    @Test("the one-pass fast path and the general path agree: escaped slashes, a non-canonical last character")
    func apnsFastAndGeneralPaths() throws {
        let push = try #require(try self.sealedPerBucket().first)
        let body = APNsAlertTransport.body(for: push.envelope)
        #expect(APNsAlertTransport.canonicalEnvelopeBytes(body) == push.envelope.serialized)
        // JSON may escape "/" as "\/": not the form we send, so the general path reads it, to the same envelope.
        let escaped = Array(String(decoding: body, as: UTF8.self).replacingOccurrences(of: "/", with: "\\/").utf8)
        #expect(escaped.count > body.count)
        #expect(APNsAlertTransport.canonicalEnvelopeBytes(escaped) == nil)
        #expect(try APNsAlertTransport.envelope(fromBody: escaped) == push.envelope)
        // The envelope's base64 ends "x=" or "xx" with unused bits: set one, in our own framing. Both paths refuse.
        let text = String(decoding: body, as: UTF8.self)
        let base64 = try #require(text.split(separator: "\"").dropLast().last)
        let last = base64.last == "=" ? base64.dropLast(base64.hasSuffix("==") ? 2 : 1).last! : base64.last!
        #expect(base64.hasSuffix("=") || base64.count % 4 == 0)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        let bumped = alphabet[try #require(alphabet.firstIndex(of: last)) ^ 1]
        var changed = Array(base64)
        changed[changed.lastIndex(of: last)!] = bumped
        let nonCanonical = Array(text.replacingOccurrences(of: String(base64), with: String(changed)).utf8)
        #expect(nonCanonical.count == body.count)
        #expect(APNsAlertTransport.canonicalEnvelopeBytes(nonCanonical) == nil)
        #expect(throws: E2EEError(.malformedEnvelope, "")) { try APNsAlertTransport.envelope(fromBody: nonCanonical) }
    }

    @Test("a 4,096-byte APNs body is read; a 4,097-byte body is too large")
    func apnsLimit() throws {
        let large = try #require(try self.sealedPerBucket().last)
        let body = large.apnsBody
        #expect(body.count == 4093)
        // JSON whitespace before the closing brace: the general parser reads the same envelope.
        let padded = Array(body.dropLast()) + Array("   }".utf8)
        #expect(padded.count == 4096)
        #expect(try APNsAlertTransport.envelope(fromBody: padded) == large.envelope)
        let tooLong = Array(body.dropLast()) + Array("    }".utf8)
        #expect(tooLong.count == 4097)
        #expect(throws: E2EEError(.tooLarge, "")) { try APNsAlertTransport.envelope(fromBody: tooLong) }
        #expect(throws: E2EEError(.tooLarge, "")) { try self.open(tooLong, APNsAlertTransport.self) }
    }

    @Test("another transport carries an envelope sealed by PushPayload.seal and opened by PushPayload.open")
    func secondTransport() throws {
        for push in try self.sealedPerBucket() {
            let body = push.framedBody(FakeBinaryTransport.self)
            #expect(body.count == FakeBinaryTransport.bodyLength(forBucket: push.bucket, suite: .classical))
            #expect(body.count <= FakeBinaryTransport.maximumBodyLength)
            #expect(body != push.apnsBody)
            #expect(try FakeBinaryTransport.envelope(fromBody: body) == push.envelope)
            let opened = try self.open(body, FakeBinaryTransport.self)
            #expect(opened.message == push.message)
            #expect(opened.bucket == push.bucket)
            // Each transport refuses the other's bodies (the fake's smaller limit comes first for a large one).
            let apnsBody = push.apnsBody
            let code: E2EEError.Code =
                apnsBody.count > FakeBinaryTransport.maximumBodyLength ? .tooLarge : .foreignPayload
            #expect(throws: E2EEError(code, "")) { try self.open(apnsBody, FakeBinaryTransport.self) }
            #expect(throws: E2EEError(.malformedEnvelope, "")) { try self.open(body, APNsAlertTransport.self) }
        }
    }
}
