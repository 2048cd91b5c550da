import Foundation
import TestSupport
import Testing

@testable import NotificationFilter

/// `FilterDecision.jsonLine()` is written by hand (every decision is logged): it must be byte for byte what
/// `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` writes, for every shape a decision takes.
@Suite("Decision JSON line: the hand-written line equals JSONEncoder's, byte for byte")
struct DecisionLineTests {
    static func encoded(_ decision: FilterDecision) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(decision), as: UTF8.self)
    }

    /// Text that needs every kind of escape JSON has, and some that needs none.
    static let awkward = [
        "", "plain", "quote \" and backslash \\", "slash / stays", "tab\tnewline\ncr\r",
        "\u{08}\u{0C}\u{01}\u{1F}\u{7F}",
        "émoji 📞 and U+2028 \u{2028} U+2029 \u{2029}", "{\"json\":[1,2]}",
    ]

    @Test("a minimal decision, and one with every field set")
    func extremes() throws {
        let minimal = FilterDecision(seq: 0, apnsID: nil, decision: .silence, reason: .replay)
        #expect(minimal.jsonLine() == #"{"decision":"silence","reason":"replay","seq":0}"#)
        #expect(minimal.jsonLine() == (try Self.encoded(minimal)))

        var full = FilterDecision(seq: -7, apnsID: "ID/\"x\"", decision: .ring, reason: .freshInvite)
        full.kind = "call-invite"
        full.account = "bob"
        full.messageID = "0123456789abcdef0123456789abcdef"
        full.senderDevice = "phone"
        full.callID = UUID(uuidString: "0A1B2C3D-4E5F-4071-8293-A4B5C6D7E8F9")
        full.alert = FilterDecision.Alert(title: "T", subtitle: "S", body: "B", threadID: "th")
        full.handoff = FilterDecision.Handoff(
            callID: UUID(uuidString: "0A1B2C3D-4E5F-4071-8293-A4B5C6D7E8F9")!,
            callerHandle: "+1 555",
            displayName: "Alice",
            hasVideo: true,
            account: "bob",
            ringDeadlineMs: 1_800_000_030_000,
            groupParticipants: ["a", "b\"c"]
        )
        #expect(full.jsonLine() == (try Self.encoded(full)))
        #expect(full.jsonLine().hasPrefix(#"{"account":"bob","alert":{"body":"B","subtitle":"S","thread_id":"th""#))
    }

    @Test("2,000 seeded random decisions: every action, reason, optional field and escape")
    func random() throws {
        var rng = SeededGenerator(seed: 0xDEC1_5104)
        let actions: [FilterDecision.Action] = [.ring, .alert, .missedCall, .silence, .fallback]
        let reasons: [FilterReason] = [
            .freshInvite, .text, .replay, .opening(.badSignature), .callRefusedDoNotDisturb, .stale,
            FilterReason(rawValue: "call-refused-somethingNew"),
        ]
        func text() -> String { Self.awkward.randomElement(using: &rng)! + String(Int.random(in: 0...99, using: &rng)) }
        func maybe<T>(_ value: @autoclosure () -> T) -> T? { Bool.random(using: &rng) ? value() : nil }
        for _ in 0..<2_000 {
            var d = FilterDecision(
                seq: Int64.random(in: Int64.min...Int64.max, using: &rng),
                apnsID: maybe(text()),
                decision: actions.randomElement(using: &rng)!,
                reason: reasons.randomElement(using: &rng)!
            )
            d.kind = maybe(text())
            d.account = maybe(text())
            d.messageID = maybe(text())
            d.senderDevice = maybe(text())
            d.callID = maybe(UUID())
            d.alert = maybe(
                FilterDecision.Alert(title: text(), subtitle: maybe(text()), body: text(), threadID: maybe(text()))
            )
            d.handoff = maybe(
                FilterDecision.Handoff(
                    callID: UUID(),
                    callerHandle: text(),
                    displayName: text(),
                    hasVideo: Bool.random(using: &rng),
                    account: text(),
                    ringDeadlineMs: Int64.random(in: -1_000...Int64.max, using: &rng),
                    groupParticipants: maybe((0..<Int.random(in: 0...3, using: &rng)).map { _ in text() })
                )
            )
            let expected = try Self.encoded(d)
            #expect(d.jsonLine() == expected)
            if d.jsonLine() != expected { return }  // one failure tells enough
        }
    }
}
