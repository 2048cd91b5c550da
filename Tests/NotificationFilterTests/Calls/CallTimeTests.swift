import Foundation
import Testing

@testable import NotificationFilter

/// The engine's milliseconds and the CallKit-like side's `Date` meet in one conversion, exact both ways.
@Suite("Call time: milliseconds and Date")
struct CallTimeTests {
    @Test("milliseconds → Date → milliseconds is exact, for every millisecond of a range and at the edges")
    func roundTrip() {
        let start: Int64 = 1_800_000_000_000
        for ms in (start..<start + 20_000) {
            #expect(Date(milliseconds: ms).milliseconds == ms)
        }
        var generator = SystemRandomNumberGenerator()
        let sampled = (0..<20_000).map { _ in Int64.random(in: 0...4_102_444_800_000, using: &generator) }
        for ms: Int64 in [0, 1, 999, 1_000, 4_102_444_800_000, 253_402_300_799_999] + sampled {
            #expect(Date(milliseconds: ms).milliseconds == ms)
        }
        #expect(TimeInterval(milliseconds: 30_001) == 30.001)
        #expect(Date(timeIntervalSince1970: 1.9989).milliseconds == 1_998)
    }

    @Test("a refused call's missed event is stamped with the decision's millisecond, not one before")
    func refusedEventKeepsItsMillisecond() async throws {
        let h = try EngineHarness()
        await h.reporter.provider.updateConfiguration(CallProviderConfiguration(doNotDisturb: true))
        h.clock.advance(ms: 7)
        let d = try await h.decide(h.body(EngineHarness.invite(UUID())))
        #expect(d.reason == .callRefusedDoNotDisturb)
        #expect(h.events.events.last?.atMs == EngineHarness.start + 7)
    }
}
