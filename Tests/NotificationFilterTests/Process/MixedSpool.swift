import E2EECore
import Foundation
import TestSupport

/// A spool of mixed payloads whose decisions are known in advance, independent of the time they are decided:
/// invites ring for an hour, late invites were sent two hours ago with a one-minute ring window.
///
/// Calls come in episodes (invite, maybe a duplicate or a replay, then a cancel), so at most one call rings at a
/// time and the call provider's limit of two live calls never refuses one.
struct MixedSpool {
    struct Entry {
        var seq: Int64
        var line: String
        var decision: String
        var reason: String
    }

    private(set) var entries: [Entry] = []
    /// Calls that end as missed: too late, cancelled before the invite, or hung up by the caller while ringing.
    private(set) var expectedMissed: Set<UUID> = []
    /// Calls whose invite is decided `ring`.
    private(set) var ringing: Set<UUID> = []

    /// Builds about `count` entries.
    init(fixture: FilterFixture, count: Int, rng: inout SeededGenerator) throws {
        var texts: [[UInt8]] = []
        var entries: [Entry] = []
        var expectedMissed: Set<UUID> = []
        var ringing: Set<UUID> = []
        let t0 = fixture.startMs
        func add(_ body: [UInt8], _ decision: String, _ reason: String) {
            let seq = Int64(entries.count + 1)
            let line = SpoolRecord(seq: seq, body: body, receivedAtMs: t0).jsonLine()
            entries.append(Entry(seq: seq, line: line, decision: decision, reason: reason))
        }
        /// A broken spool record that still carries its `seq`.
        func addRaw(_ json: (Int64) -> String, _ reason: String) {
            let seq = Int64(entries.count + 1)
            entries.append(Entry(seq: seq, line: json(seq), decision: "fallback", reason: reason))
        }
        while entries.count < count {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<22:
                let body = try fixture.body(FilterFixture.text("message \(entries.count)"))
                texts.append(body)
                add(body, "alert", "text")
            case 22..<30:
                add(try fixture.body(.receipt(Receipt(messageIDs: [.random()]))), "silence", "receipt")
            case 30..<60:
                // A call that rings, then is cancelled; maybe a retry and a replay of the invite while it rings.
                let callID = UUID()
                let invite = try fixture.body(FilterFixture.invite(callID))
                add(invite, "ring", "fresh-invite")
                ringing.insert(callID)
                if Bool.random(using: &rng) {
                    add(try fixture.body(FilterFixture.invite(callID)), "silence", "duplicate-call")
                }
                if Bool.random(using: &rng) { add(invite, "silence", "replay") }
                let hungUp = Bool.random(using: &rng)
                add(
                    try fixture.body(FilterFixture.cancel(callID, hungUp ? .remoteEnded : .answeredElsewhere)),
                    "silence",
                    "call-cancelled"
                )
                if hungUp { expectedMissed.insert(callID) }
                if Int.random(in: 0..<4, using: &rng) == 0 {
                    add(
                        try fixture.body(FilterFixture.cancel(callID, .remoteEnded)),
                        "silence",
                        "cancel-for-ended-call"
                    )
                }
            case 60..<70:
                // The cancel overtakes its invite: the late invite becomes a missed call.
                let callID = UUID()
                add(try fixture.body(FilterFixture.cancel(callID, .remoteEnded)), "silence", "cancel-before-invite")
                if Bool.random(using: &rng) {
                    add(try fixture.body(.receipt(Receipt(messageIDs: [.random()]))), "silence", "receipt")
                }
                add(try fixture.body(FilterFixture.invite(callID)), "missed-call", "cancelled-before-invite")
                expectedMissed.insert(callID)
            case 70..<78:
                // Sent two hours ago with a one-minute ring window: too late to ring.
                let callID = UUID()
                add(
                    try fixture.body(FilterFixture.invite(callID, timeout: 60), sentAtMs: t0 - 7_200_000),
                    "missed-call",
                    "invite-expired"
                )
                expectedMissed.insert(callID)
            case 78..<85:
                if let old = texts.randomElement(using: &rng) {
                    add(old, "silence", "replay")
                }
            case 85..<89:
                add(
                    try fixture.body(FilterFixture.text("who is this"), from: fixture.mallory),
                    "fallback",
                    "unknown-sender"
                )
            default:
                switch Int.random(in: 0..<5, using: &rng) {
                // Not a spool record (keys missing or of the wrong type): a bare body without "e2ee".
                case 0: addRaw({ "{\"body\":42,\"seq\":\($0)}" }, "foreign-payload")
                // A spool record whose body_base64 is not base64: the one malformed input.
                case 1: addRaw({ Self.record(seq: $0, "\"body_base64\":\"!!not base64!!\"") }, "malformed-input")
                case 2: addRaw({ Self.record(seq: $0, "\"body\":\"{\\\"aps\\\":{}}\"") }, "foreign-payload")
                case 3: addRaw({ Self.record(seq: $0, "\"body\":\"not json at all\"") }, "malformed-envelope")
                default: addRaw({ "{\"seq\":\($0),\"unrelated\":[1,2,3]}" }, "foreign-payload")
                }
            }
        }
        self.entries = entries
        self.expectedMissed = expectedMissed
        self.ringing = ringing
    }

    /// A spool record with every required key, its body given as `bodyKey` (`"body":…` or `"body_base64":…`).
    private static func record(seq: Int64, _ bodyKey: String) -> String {
        "{\"apns_id\":\"broken-\(seq)\"," + bodyKey
            + ",\"device_token\":\"ab\",\"headers\":{},\"received_at_ms\":0,\"seq\":\(seq)}"
    }

    /// The spool file's bytes for entries `range`, one line each.
    func bytes(_ range: Range<Int>) -> [UInt8] {
        Array(self.entries[range].map { $0.line + "\n" }.joined().utf8)
    }
}
