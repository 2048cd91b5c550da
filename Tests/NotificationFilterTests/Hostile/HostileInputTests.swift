import Foundation
import PushTransport
import Testing

@_spi(Vectors) @testable import E2EECore
@testable import NotificationFilter

/// The hostile-input suite: every malformed, tampered, replayed, stale, oversized or foreign input gets exactly one
/// decision with its documented reason, and the engine goes on.
@Suite("Hostile inputs (table-driven)")
struct HostileInputTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var line: [UInt8]
        var decision: FilterDecision.Action
        var reason: String
        var description: String { self.name }
    }

    static let sigContext = Array("e2ee-push/sig/v1".utf8) + [0]

    /// A body from a hand-made plaintext: `signedPart` signed by `signer` (unless `signature` is given), padded with
    /// `pad` (nil: no padding at all, which must fail to open), sealed to bob's current key.
    static func handMade(
        _ h: EngineHarness,
        signedPart: [UInt8],
        signer: Identity? = nil,
        pad: Bool = true,
        signature: [UInt8]? = nil
    ) throws -> [UInt8] {
        let key = h.bob.currentDeviceKey.privateKey.publicKey
        let keyID = key.keyID
        var context = try HPKE.SenderContext(
            recipient: X25519PublicKey(rawRepresentation: key.rawRepresentation),
            info: Array("e2ee-push/v1".utf8) + [0, 1, 0, 1] + keyID.bytes
        )
        let header = [UInt8(1), 0, 1] + keyID.bytes + context.encapsulatedKey
        let sig = try signature ?? (signer ?? h.alice).signingKey.signature(for: sigContext + header + signedPart)
        var plaintext = signedPart + sig
        if pad {
            plaintext = try Primitives.pad(plaintext, blockSize: 1536)
        } else {
            plaintext += [UInt8](repeating: 0, count: 1536 - plaintext.count)  // zeros, no 0x80 marker
        }
        let ct = try context.seal(plaintext, authenticating: header)
        return Array(
            ("{\"aps\":{\"alert\":{\"title\":\"New message\"},\"mutable-content\":1},\"e2ee\":\""
                + Data(header + ct).base64EncodedString() + "\"}").utf8
        )
    }

    static func signedPart(
        _ h: EngineHarness,
        kind: UInt8,
        fields: [UInt8],
        user: String = "alice",
        keyID: KeyID? = nil,
        sentAt: Int64? = nil
    ) -> [UInt8] {
        var w = ByteWriter()
        w.u8(kind)
        w.raw(MessageID.random().bytes)
        w.u64(UInt64(sentAt ?? h.clock.nowMs))
        try! w.str8(user, field: "u")
        w.raw((keyID ?? h.alice.signingKey.publicKey.keyID).bytes)
        w.u16(UInt16(fields.count))
        w.raw(fields)
        return w.bytes
    }

    static func cases(_ h: EngineHarness) throws -> [Case] {
        func text(_ body: String = "hello", sentAt: Int64? = nil) throws -> [UInt8] {
            try h.body(.text(TextMessage(threadID: "t", title: "x", body: body)), sentAtMs: sentAt)
        }
        func bare(_ s: String) -> [UInt8] { Array(s.utf8) }
        func withEnvelope(_ e: [UInt8]) -> [UInt8] {
            bare(
                "{\"aps\":{\"alert\":{\"title\":\"New message\"},\"mutable-content\":1},\"e2ee\":\""
                    + Data(e).base64EncodedString() + "\"}"
            )
        }
        let good = try text()
        let envelope = try APNsAlertTransport.envelope(fromBody: good).serialized
        func altered(_ offset: Int, _ xor: UInt8 = 0x01) -> [UInt8] {
            var e = envelope
            e[offset] ^= xor
            return withEnvelope(e)
        }
        func enc(_ hex: String) -> [UInt8] {
            var e = envelope
            e.replaceSubrange(11..<43, with: Hex.decode(hex)!)
            return withEnvelope(e)
        }
        func pad(_ body: [UInt8], to total: Int) -> [UInt8] {
            // {"pad":"xxx", + the rest of the body after its opening brace
            let filler = total - body.count - 9
            return bare("{\"pad\":\"" + String(repeating: "p", count: filler) + "\",") + body.dropFirst()
        }
        let replayed = try text("once")
        let forgedMessage = InnerMessage(
            messageID: .random(),
            sentAtMs: UInt64(h.clock.nowMs),
            senderUserID: "alice",
            senderSigningKeyID: h.alice.signingKey.publicKey.keyID,
            content: .text(TextMessage(threadID: "", title: "", body: "forged"))
        )
        let forged = try PushPayload.sealUnchecked(
            forgedMessage,
            to: h.bob.currentDeviceKey.privateKey.publicKey,
            recipientKeyID: h.bob.currentDeviceKey.keyID,
            signingKey: h.mallory.signingKey,
            padding: APNsAlertTransport.padding
        ).apnsBody
        let relabelled = try PushPayload.sealUnchecked(
            forgedMessage,
            to: h.mallory.currentDeviceKey.privateKey.publicKey,
            recipientKeyID: h.bob.currentDeviceKey.keyID,
            signingKey: h.alice.signingKey,
            padding: APNsAlertTransport.padding
        ).apnsBody
        let textFields: [UInt8] = [1, 0x41, 1, 0x42, 0, 1, 0x43]

        var cases: [Case] = [
            // Neither a request line nor a spool record: a bare body, decided by docs/PROTOCOL.md §4.
            Case(name: "empty line", line: [], decision: .fallback, reason: "malformed-envelope"),
            Case(name: "whitespace only", line: bare("   \t "), decision: .fallback, reason: "malformed-envelope"),
            Case(name: "JSON null", line: bare("null"), decision: .fallback, reason: "malformed-envelope"),
            Case(name: "JSON array", line: bare("[]"), decision: .fallback, reason: "malformed-envelope"),
            Case(name: "JSON number", line: bare("42"), decision: .fallback, reason: "malformed-envelope"),
            Case(name: "JSON string", line: bare("\"e2ee\""), decision: .fallback, reason: "malformed-envelope"),
            Case(name: "broken JSON", line: bare("{\"aps\":{"), decision: .fallback, reason: "malformed-envelope"),
            Case(name: "empty object", line: bare("{}"), decision: .fallback, reason: "foreign-payload"),
            Case(
                name: "wrong-typed body: not a request line, a body without e2ee",
                line: bare("{\"device_token\":\"ab\",\"body\":5}"),
                decision: .fallback,
                reason: "foreign-payload"
            ),
            Case(
                name: "spool keys missing, bad body_base64: a body without e2ee",
                line: bare("{\"apns_id\":\"x\",\"body_base64\":\"!!\"}"),
                decision: .fallback,
                reason: "foreign-payload"
            ),
            Case(
                name: "invalid UTF-8",
                line: [0x7B, 0xFF, 0xFE, 0x7D],
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "deep nesting (20,000 bytes)",
                line: Array(repeating: UInt8(ascii: "["), count: 10_000)
                    + Array(repeating: UInt8(ascii: "]"), count: 10_000),
                decision: .fallback,
                reason: "too-large"
            ),
            Case(
                name: "deep nesting within 4,096 bytes",
                line: Array(repeating: UInt8(ascii: "["), count: 2_000)
                    + Array(repeating: UInt8(ascii: "]"), count: 2_000),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "request line, body not JSON",
                line: bare("{\"body\":\"not json\",\"device_token\":\"ab\",\"headers\":{}}"),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "foreign payload (no e2ee key)",
                line: bare("{\"aps\":{\"alert\":\"hi\"}}"),
                decision: .fallback,
                reason: "foreign-payload"
            ),
            Case(
                name: "e2ee is a number",
                line: bare("{\"aps\":{},\"e2ee\":12345}"),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "e2ee is null",
                line: bare("{\"aps\":{},\"e2ee\":null}"),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "huge number beside e2ee",
                line: bare("{\"aps\":1e999999,\"e2ee\":\"AQAB\"}"),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "e2ee empty",
                line: bare("{\"aps\":{},\"e2ee\":\"\"}"),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "bad base64",
                line: bare("{\"aps\":{},\"e2ee\":\"!!!!\"}"),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "base64 with whitespace",
                line: bare("{\"aps\":{},\"e2ee\":\"AQAB AQAB\"}"),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "body of exactly 4,096 bytes",
                line: pad(try text("fits"), to: 4096),
                decision: .alert,
                reason: "text"
            ),
            Case(
                name: "body of 4,097 bytes",
                line: pad(try text("too big"), to: 4097),
                decision: .fallback,
                reason: "too-large"
            ),
            Case(
                name: "truncated: version only",
                line: withEnvelope(Array(envelope.prefix(1))),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "truncated: after suite",
                line: withEnvelope(Array(envelope.prefix(3))),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "truncated: after key id",
                line: withEnvelope(Array(envelope.prefix(11))),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "truncated: after enc",
                line: withEnvelope(Array(envelope.prefix(43))),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "truncated: inside ciphertext",
                line: withEnvelope(Array(envelope.prefix(500))),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(
                name: "one byte too many",
                line: withEnvelope(envelope + [0]),
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            Case(name: "version altered", line: altered(0, 0x02), decision: .fallback, reason: "unsupported-version"),
            Case(name: "version 0", line: altered(0, 0x01), decision: .fallback, reason: "unsupported-version"),
            Case(name: "suite altered", line: altered(2), decision: .fallback, reason: "unsupported-suite"),
            Case(name: "key id altered", line: altered(5), decision: .fallback, reason: "unknown-recipient-key"),
            Case(name: "enc altered", line: altered(20), decision: .fallback, reason: "open-failed"),
            Case(name: "ciphertext altered", line: altered(43), decision: .fallback, reason: "open-failed"),
            Case(
                name: "tag altered",
                line: altered(envelope.count - 1, 0x80),
                decision: .fallback,
                reason: "open-failed"
            ),
            Case(
                name: "enc all zero",
                line: enc(String(repeating: "00", count: 32)),
                decision: .fallback,
                reason: "open-failed"
            ),
            Case(
                name: "enc = 1 (low order)",
                line: enc("01" + String(repeating: "00", count: 31)),
                decision: .fallback,
                reason: "open-failed"
            ),
            Case(
                name: "enc of order 8",
                line: enc("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
                decision: .fallback,
                reason: "open-failed"
            ),
            Case(
                name: "enc = p - 1",
                line: enc("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
                decision: .fallback,
                reason: "open-failed"
            ),
            Case(
                name: "enc = p",
                line: enc("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
                decision: .fallback,
                reason: "open-failed"
            ),
            Case(
                name: "enc = p + 1",
                line: enc("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
                decision: .fallback,
                reason: "open-failed"
            ),
            Case(
                name: "forged signature (another key, alice's key id)",
                line: forged,
                decision: .fallback,
                reason: "bad-signature"
            ),
            Case(
                name: "signature of zeros",
                line: try handMade(
                    h,
                    signedPart: signedPart(h, kind: 3, fields: textFields),
                    signature: [UInt8](repeating: 0, count: 64)
                ),
                decision: .fallback,
                reason: "bad-signature"
            ),
            Case(
                name: "unknown sender",
                line: try h.body(.text(TextMessage(threadID: "", title: "", body: "hi")), from: h.mallory),
                decision: .fallback,
                reason: "unknown-sender"
            ),
            Case(
                name: "valid envelope for another recipient",
                line: try h.body(
                    .text(TextMessage(threadID: "", title: "", body: "x")),
                    to: h.mallory.currentDeviceKey.privateKey.publicKey
                ),
                decision: .fallback,
                reason: "unknown-recipient-key"
            ),
            Case(
                name: "sealed to another key, labelled with ours",
                line: relabelled,
                decision: .fallback,
                reason: "open-failed"
            ),
            Case(
                name: "no padding marker",
                line: try handMade(h, signedPart: signedPart(h, kind: 3, fields: textFields), pad: false),
                decision: .fallback,
                reason: "open-failed"
            ),
            Case(
                name: "inner: invalid UTF-8 title",
                line: try handMade(h, signedPart: signedPart(h, kind: 3, fields: [1, 0x41, 1, 0xFF, 0, 1, 0x43])),
                decision: .fallback,
                reason: "malformed-message"
            ),
            Case(
                name: "inner: cancel reason 9",
                line: try handMade(
                    h,
                    signedPart: signedPart(h, kind: 2, fields: [UInt8](repeating: 7, count: 16) + [9])
                ),
                decision: .fallback,
                reason: "malformed-message"
            ),
            Case(
                name: "inner: kind 0xFF",
                line: try handMade(h, signedPart: signedPart(h, kind: 0xFF, fields: [])),
                decision: .fallback,
                reason: "malformed-message"
            ),
            Case(
                name: "inner: trailing bytes in fields",
                line: try handMade(h, signedPart: signedPart(h, kind: 3, fields: textFields + [0])),
                decision: .fallback,
                reason: "malformed-message"
            ),
            Case(
                name: "inner: ring timeout 0",
                line: try handMade(
                    h,
                    signedPart: signedPart(
                        h,
                        kind: 1,
                        fields: [UInt8](repeating: 1, count: 16) + [1, 0x61, 0, 0, 0, 0, 0, 0]
                    )
                ),
                decision: .fallback,
                reason: "malformed-message"
            ),
            Case(
                name: "send time 1 ms past the clock allowance",
                line: try text(sentAt: h.clock.nowMs + 30_001),
                decision: .fallback,
                reason: "clock"
            ),
            Case(
                name: "send time at the clock allowance",
                line: try text(sentAt: h.clock.nowMs + 30_000),
                decision: .alert,
                reason: "text"
            ),
            Case(
                name: "send time at the retention limit",
                line: try text(sentAt: h.clock.nowMs - 48 * 3_600_000),
                decision: .alert,
                reason: "text"
            ),
            Case(
                name: "send time 1 ms before the retention limit",
                line: try text(sentAt: h.clock.nowMs - 48 * 3_600_000 - 1),
                decision: .fallback,
                reason: "stale"
            ),
            Case(name: "send time 0 (1970)", line: try text(sentAt: 0), decision: .fallback, reason: "stale"),
            Case(
                name: "unknown kind 0x90",
                line: try h.body(.unknown(kind: MessageKind(rawValue: 0x90), fields: [1, 2])),
                decision: .silence,
                reason: "unknown-kind"
            ),
            Case(
                name: "extra keys, other order, whitespace",
                line: bare(
                    "{ \"x\" : [1,2,{}], \"e2ee\" : \"" + Data(envelope).base64EncodedString() + "\" , \"aps\":{} }"
                ),
                decision: .alert,
                reason: "text"
            ),
            Case(name: "first delivery of a push", line: replayed, decision: .alert, reason: "text"),
            Case(name: "the same push replayed", line: replayed, decision: .silence, reason: "replay"),
        ]
        // The extra-keys case above opened the same envelope first.
        cases.append(Case(name: "the good push itself", line: good, decision: .silence, reason: "replay"))
        return cases
    }

    @Test("every hostile input gets exactly one decision with its reason, and the engine goes on")
    func table() async throws {
        let h = try EngineHarness()
        let cases = try Self.cases(h)
        #expect(cases.count >= 40)
        #expect(Set(cases.map(\.name)).count == cases.count)
        var decided = 0
        for (i, c) in cases.enumerated() {
            let input = PayloadInput.parse(line: c.line, defaultSeq: Int64(i + 1))
            let outcome = try await h.engine.process([input])
            #expect(outcome.decisions.count == 1, "\(c.name)")
            if c.name.hasPrefix("body of") { #expect(c.line.count == (c.name.contains("4,096") ? 4096 : 4097)) }
            decided += outcome.decisions.count
            guard let d = outcome.decisions.first else { continue }
            #expect(d.seq == Int64(i + 1), "\(c.name)")
            #expect(d.decision == c.decision, "\(c.name): got \(d.decision) \(d.reason)")
            #expect(d.reason.rawValue == c.reason, "\(c.name): got \(d.reason)")
            if d.decision == .fallback {
                #expect(d.alert == FilterDecision.fallbackAlert, "\(c.name)")
            }
        }
        #expect(decided == cases.count)
        #expect(await h.reporter.violations == 0)
        // Still up: a fresh good payload is decided normally.
        #expect(
            try await h.decide(h.body(.text(TextMessage(threadID: "", title: "", body: "after")))).decision == .alert
        )
    }

    @Test("a whole hostile batch in one transaction still yields one decision per input, in order")
    func batch() async throws {
        let h = try EngineHarness()
        let cases = try Self.cases(h)
        let inputs = cases.enumerated().map {
            PayloadInput.parse(line: $0.element.line, defaultSeq: Int64($0.offset + 1))
        }
        let outcome = try await h.engine.process(inputs)
        #expect(outcome.decisions.map(\.seq) == (1...Int64(cases.count)).map { $0 })
    }

    @Test("fuzz regressions in Fixtures/fuzz-regressions each get one decision")
    func fuzzRegressions() async throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/fuzz-regressions")
            .path
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(names.contains("README.txt"), "missing Fixtures/fuzz-regressions")
        let h = try EngineHarness()
        for (i, name) in names.enumerated() {
            let data = try #require(FileManager.default.contents(atPath: folder + "/" + name))
            let outcome = try await h.engine.process(
                [PayloadInput.parse(line: Array(data), defaultSeq: Int64(i + 1))],
                deduplicateBySeq: false
            )
            #expect(outcome.decisions.count == 1, "\(name)")
        }
    }
}

extension HostileInputTests {
    struct FramingCase: Sendable, CustomStringConvertible {
        var name: String
        var line: [UInt8]
        var kind: PayloadInput.LineKind
        var decision: FilterDecision.Action
        var reason: String
        var description: String { self.name }
    }

    /// Input framing (README.md, "What `e2ee-filter run` reads"): a line is a spool record or a request line only
    /// by its keys and their types, and every other line is a bare APNs body decided by docs/PROTOCOL.md §4.
    static func framingCases(_ h: EngineHarness) throws -> [FramingCase] {
        func bare(_ s: String) -> [UInt8] { Array(s.utf8) }
        /// The base64 envelope of a fresh text push (a new message each time, so none is a replay).
        func envelope() throws -> String {
            let body = try h.body(.text(TextMessage(threadID: "t", title: "x", body: "framing")))
            return Data(try APNsAlertTransport.envelope(fromBody: body).serialized).base64EncodedString()
        }
        func aps(_ extra: String) throws -> [UInt8] {
            bare("{\"aps\":{\"alert\":{\"title\":\"New message\"},\"mutable-content\":1}," + extra + "}")
        }
        func jsonString(_ bytes: [UInt8]) -> String {
            String(decoding: try! JSONEncoder().encode(String(decoding: bytes, as: UTF8.self)), as: UTF8.self)
        }
        /// `line` with its one U+FFFD (EF BF BD) replaced by bytes that are not UTF-8 (C3 28 FF).
        func invalidUTF8(_ line: [UInt8]) -> [UInt8] {
            let at = line.indices.first { line[$0...].starts(with: [0xEF, 0xBF, 0xBD]) }!
            return Array(line[..<at]) + [0xC3, 0x28, 0xFF] + Array(line[(at + 3)...])
        }
        let headers = "{\"apns-id\":\"A\",\"apns-push-type\":\"alert\"}"
        let good = try h.body(.text(TextMessage(threadID: "t", title: "x", body: "in a request line")))
        let spooled = try h.body(.text(TextMessage(threadID: "t", title: "x", body: "in a spool record")))
        let garbage4097 = [UInt8](repeating: UInt8(ascii: "x"), count: 4097)
        var trailing4097 = try aps("\"e2ee\":\"" + envelope() + "\"")
        trailing4097 += [UInt8](repeating: UInt8(ascii: "x"), count: 4097 - trailing4097.count)
        return [
            FramingCase(
                name: "APNs body with an extra top-level body key",
                line: try aps("\"body\":\"not a request\",\"e2ee\":\"" + envelope() + "\""),
                kind: .bareBody,
                decision: .alert,
                reason: "text"
            ),
            FramingCase(
                name: "APNs body with an extra top-level body_base64 key",
                line: try aps("\"body_base64\":\"!!\",\"e2ee\":\"" + envelope() + "\""),
                kind: .bareBody,
                decision: .alert,
                reason: "text"
            ),
            FramingCase(
                name: "APNs body with body, device_token and headers keys beside e2ee",
                line: try aps(
                    "\"body\":\"x\",\"device_token\":\"ab\",\"headers\":{},\"e2ee\":\"" + envelope() + "\""
                ),
                kind: .bareBody,
                decision: .alert,
                reason: "text"
            ),
            FramingCase(name: "{}", line: bare("{}"), kind: .bareBody, decision: .fallback, reason: "foreign-payload"),
            FramingCase(
                name: "an object of other keys",
                line: bare("{\"seq\":3,\"unrelated\":[1,2,3]}"),
                kind: .bareBody,
                decision: .fallback,
                reason: "foreign-payload"
            ),
            FramingCase(
                name: "not JSON",
                line: bare("this is not json"),
                kind: .bareBody,
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            FramingCase(
                name: "[]",
                line: bare("[]"),
                kind: .bareBody,
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            FramingCase(
                name: "a string",
                line: bare("\"e2ee\""),
                kind: .bareBody,
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            FramingCase(
                name: "null",
                line: bare("null"),
                kind: .bareBody,
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            FramingCase(
                name: "NaN",
                line: bare("NaN"),
                kind: .bareBody,
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            FramingCase(
                name: "NaN beside a valid e2ee",
                line: try aps("\"x\":NaN,\"e2ee\":\"" + envelope() + "\""),
                kind: .bareBody,
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            FramingCase(
                name: "Infinity beside a valid e2ee",
                line: try aps("\"x\":-Infinity,\"e2ee\":\"" + envelope() + "\""),
                kind: .bareBody,
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            FramingCase(
                name: "trailing garbage after a valid body",
                line: try aps("\"e2ee\":\"" + envelope() + "\"") + bare(" x"),
                kind: .bareBody,
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            FramingCase(
                name: "a second object after a valid body",
                line: try aps("\"e2ee\":\"" + envelope() + "\"") + bare("{}"),
                kind: .bareBody,
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            FramingCase(
                name: "4,097 bytes of non-JSON",
                line: garbage4097,
                kind: .bareBody,
                decision: .fallback,
                reason: "too-large"
            ),
            FramingCase(
                name: "a valid body and trailing garbage, 4,097 bytes",
                line: trailing4097,
                kind: .bareBody,
                decision: .fallback,
                reason: "too-large"
            ),
            FramingCase(
                name: "invalid UTF-8 in a value no one reads",
                line: invalidUTF8(try aps("\"x\":\"\u{FFFD}\",\"e2ee\":\"" + envelope() + "\"")),
                kind: .bareBody,
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            FramingCase(
                name: "invalid UTF-8 in a key",
                line: invalidUTF8(bare("{\"\u{FFFD}\":1,\"e2ee\":\"" + (try envelope()) + "\"}")),
                kind: .bareBody,
                decision: .fallback,
                reason: "malformed-envelope"
            ),
            FramingCase(
                name: "request line",
                line: bare(
                    "{\"body\":" + jsonString(good) + ",\"device_token\":\"ab\",\"headers\":" + headers + "}"
                ),
                kind: .requestLine,
                decision: .alert,
                reason: "text"
            ),
            FramingCase(
                name: "request line without headers: a body without e2ee",
                line: bare(
                    "{\"body\":" + jsonString(try h.body(.text(TextMessage(threadID: "", title: "", body: "h"))))
                        + ",\"device_token\":\"ab\"}"
                ),
                kind: .bareBody,
                decision: .fallback,
                reason: "foreign-payload"
            ),
            FramingCase(
                name: "request line, headers not strings: a body without e2ee",
                line: bare("{\"body\":\"{}\",\"device_token\":\"ab\",\"headers\":{\"apns-priority\":10}}"),
                kind: .bareBody,
                decision: .fallback,
                reason: "foreign-payload"
            ),
            FramingCase(
                name: "spool record",
                line: bare(
                    "{\"apns_id\":\"B\",\"body\":" + jsonString(spooled)
                        + ",\"device_token\":\"ab\",\"headers\":{},\"received_at_ms\":1,\"seq\":9001}"
                ),
                kind: .spoolRecord,
                decision: .alert,
                reason: "text"
            ),
            FramingCase(
                name: "spool record, body_base64",
                line: bare(
                    "{\"apns_id\":\"C\",\"body_base64\":\""
                        + Data(try h.body(.text(TextMessage(threadID: "", title: "", body: "b64"))))
                        .base64EncodedString()
                        + "\",\"device_token\":\"ab\",\"headers\":{},\"received_at_ms\":1,\"seq\":9002}"
                ),
                kind: .spoolRecord,
                decision: .alert,
                reason: "text"
            ),
            FramingCase(
                name: "spool record, body_base64 not base64",
                line: bare(
                    "{\"apns_id\":\"D\",\"body_base64\":\"!!\",\"device_token\":\"ab\",\"headers\":{},\"received_at_ms\":1,\"seq\":9003}"
                ),
                kind: .spoolRecord,
                decision: .fallback,
                reason: "malformed-input"
            ),
        ]
    }

    @Test("each line is a spool record, a request line or a bare body by one rule; bare bodies get §4's codes")
    func framing() async throws {
        let h = try EngineHarness()
        let cases = try Self.framingCases(h)
        #expect(cases.count == 24)
        #expect(Set(cases.map(\.name)).count == cases.count)
        for (i, c) in cases.enumerated() {
            #expect(PayloadInput.kind(of: c.line) == c.kind, "\(c.name)")
            let input = PayloadInput.parse(line: c.line, defaultSeq: Int64(i + 1))
            if c.kind != .spoolRecord { #expect(input.seq == Int64(i + 1), "\(c.name)") }
            let outcome = try await h.engine.process([input])
            #expect(outcome.decisions.count == 1, "\(c.name)")
            guard let d = outcome.decisions.first else { continue }
            #expect(d.decision == c.decision, "\(c.name): got \(d.decision) \(d.reason)")
            #expect(d.reason.rawValue == c.reason, "\(c.name): got \(d.reason)")
        }
        // What a line carries besides the body: a spool record its seq and apns_id, a request line its apns-id header.
        let record = PayloadInput.parse(line: cases[21].line, defaultSeq: 1)
        #expect(record.seq == 9001 && record.apnsID == "B")
        #expect(PayloadInput.parse(line: cases[18].line, defaultSeq: 5).apnsID == "A")
        #expect(PayloadInput.parse(line: cases[0].line, defaultSeq: 5).apnsID == nil)
    }
}
