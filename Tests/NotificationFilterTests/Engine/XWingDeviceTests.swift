import E2EECore
import Foundation
import PushTransport
import Testing

@testable import NotificationFilter

/// A device that moved to the X-Wing suite (docs/PROTOCOL.md §16.4), through the filter: X-Wing pushes ring and
/// alert as classical ones do, and classical pushes open with its old X25519 key only until that key's grace ends.
@Suite("Filter on an X-Wing device")
struct XWingDeviceTests {
    @Test("an X-Wing invite rings and a text alerts; the old X25519 key opens until its expiry, then never")
    func xwingDevice() async throws {
        let h = try EngineHarness(bobSuite: .xwing)
        #expect(h.bob.deviceKeys.map(\.privateKey.suite) == [.classical, .xwing])
        let callID = UUID()
        let invite = try h.body(EngineHarness.invite(callID))
        #expect(invite.count == 4093)
        #expect(try await h.decide(invite).decision == .ring)
        let text = MessageContent.text(TextMessage(threadID: "", title: "Hi", body: "post-quantum"))
        let alert = try await h.decide(h.body(text))
        #expect(alert.decision == .alert)
        #expect(alert.reason == .text)
        let old = h.bob.deviceKeys[0].privateKey.publicKey
        let expires = try #require(h.bob.deviceKeys[0].expiresAtMs)
        #expect(try await h.decide(h.body(text, to: old)).decision == .alert)
        h.clock.advance(ms: Int64(expires) - h.clock.nowMs)
        let refused = try await h.decide(h.body(text, to: old))
        #expect(refused.decision == .fallback)
        #expect(refused.reason == .opening(.unknownRecipientKey))
        #expect(try await h.decide(h.body(text)).decision == .alert, "the X-Wing key still opens")
    }
}
