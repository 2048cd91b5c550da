import APNsGateway
import E2EECore
import Foundation
import Sender
import Testing

@testable import Relay

/// The relay carries X-Wing envelopes (docs/PROTOCOL.md §16) as it carries classical ones: a user with a classical
/// phone and an X-Wing tablet, one submit, both bodies at APNs byte for byte, each opened by its device.
@Suite("Relay with both crypto suites")
struct RelayXWingTests {
    @Test("a classical and an X-Wing envelope of one message reach the gateway byte for byte and open")
    func bothSuites() async throws {
        try await ServiceFixture.with { fixture in
            try await GatewayFixture.with { gateway in
                try await gateway.withClient { client in
                    let alice = try TestUser.make("alice", devices: ["laptop"])
                    var bob = try TestUser.make("bob")
                    var tablet = bob.device("tablet")
                    tablet.rotate(nowMs: 1_800_000_000_000, gracePeriodMs: 0, suite: .xwing)
                    bob.list = try bob.list.signingIn(
                        try DeviceRequest.make(for: tablet, push: nil, nowMs: 1_800_000_000_000),
                        signer: bob.device("phone"),
                        nowMs: 1_800_000_000_000
                    )
                    bob.devices = [bob.device("phone"), tablet]
                    #expect(bob.list.formatVersion == 3)
                    let token = DeliveryToken()
                    try await fixture.enroll(bob, token: token)
                    let phone = try bob.sealText(from: alice.devices[0], to: "phone")
                    let xwing = try bob.sealText(from: alice.devices[0], to: "tablet")
                    #expect((phone.envelope.suite, xwing.envelope.suite) == (.classical, .xwing))
                    _ = try await fixture.service.submit(
                        userID: "bob",
                        authorization: "Bearer \(token.hex)",
                        idempotencyKey: "k",
                        body: submitBody([("phone", phone), ("tablet", xwing)])
                    )
                    #expect(await RelayDeliveryTests.delivery(fixture, client).runOnce() == 2)
                    let records = Dictionary(
                        uniqueKeysWithValues: gateway.sink.records.map { ($0.deviceToken, $0.bodyBytes) }
                    )
                    let tabletBody = try #require(records[TestUser.token("tablet")])
                    #expect(records[TestUser.token("phone")] == phone.apnsBody)
                    #expect(tabletBody == xwing.apnsBody)
                    #expect(tabletBody.count == 4093)
                    let opened = try PushPayload.open(
                        body: tabletBody,
                        deviceKey: { tablet.deviceKey(for: $0, nowMs: 1_800_000_000_000) },
                        signingKey: { _, id in alice.list.device(signingKeyID: id)?.signingKey }
                    )
                    #expect(opened.message.messageID == xwing.message.messageID)
                }
            }
        }
    }
}
