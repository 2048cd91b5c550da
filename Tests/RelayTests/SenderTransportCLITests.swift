import APNsGateway
import E2EECore
import Foundation
import TestSupport
import Testing

@testable import Relay

/// How `e2ee-send` reports a server it cannot use (docs/RELAY.md "`e2ee-send --relay`"): a certificate that does not
/// verify is a configuration error (exit 78) naming the option to fix, a closed port fails at once (exit 75), both
/// without an error dump, and neither waits for the request timeout (here an hour: the child would be killed first).
@Suite("e2ee-send: untrusted and unreachable servers")
struct SenderTransportCLITests {
    static func noDump(_ stderr: String) -> Bool {
        !stderr.contains("NIOSSL") && !stderr.contains("BoringSSL") && !stderr.contains(".swift:")
            && !stderr.contains(".cc:") && !stderr.contains("Error(")
    }

    @Test("--relay-ca that did not sign the relay's certificate: exit 78 at once, naming --relay-ca; nothing queued")
    func untrustedRelay() async throws {
        try await RelaySendCLITests.with { setup in
            let result = try await ChildProcess.run(
                "e2ee-send",
                [
                    "text", "--to", "bob", "--body", "hi", "--identity", setup.folder.file("alice.identity"),
                    "--pins", setup.folder.file("pins.json"), "--contacts", setup.folder.file("contacts"),
                    "--relay", setup.url, "--relay-ca", setup.gateway.server.caCertificatePath, "--relay-timeout",
                    "3600",
                ],
                timeout: .seconds(120)
            )
            #expect(result.status == 78, "\(result.stderr)")
            #expect(result.stderr.contains("--relay-ca"), "\(result.stderr)")
            #expect(result.stderr.contains("does not verify"), "\(result.stderr)")
            #expect(Self.noDump(result.stderr), "\(result.stderr)")
            #expect(try await setup.fixture.store.counts() == [:])
        }
    }

    @Test("a relay port nothing listens on: exit 75 at once, 'connection refused', nothing queued")
    func refusedRelay() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let alice = try Identity.generate(
            userID: "alice",
            displayName: "Alice",
            deviceID: "laptop",
            nowMs: 1_800_000_000_000
        )
        try alice.save(path: folder.file("alice.identity"))
        let result = try await ChildProcess.run(
            "e2ee-send",
            [
                "text", "--to", "bob", "--body", "hi", "--identity", folder.file("alice.identity"), "--pins",
                folder.file("pins.json"), "--relay", "https://127.0.0.1:9", "--relay-timeout", "3600",
            ],
            timeout: .seconds(120)
        )
        #expect(result.status == 75, "\(result.stderr)")
        #expect(result.stderr.contains("connection refused"), "\(result.stderr)")
        #expect(result.stderr.contains("Nothing was queued"), "\(result.stderr)")
        #expect(Self.noDump(result.stderr), "\(result.stderr)")
    }

    @Test("--deliver with an --apns-ca that did not sign APNs' certificate: exit 78, naming --apns-ca")
    func untrustedAPNs() async throws {
        try await RelaySendCLITests.with { setup in
            // A one-device recipient's card, for sending without the relay.
            let carol = try TestUser.make("carol", devices: ["phone"])
            let card = setup.folder.file("carol.card.json")
            try Data(carol.list.jsonData()).write(to: URL(fileURLWithPath: card))
            let result = try await ChildProcess.run(
                "e2ee-send",
                [
                    "text", "--to", card, "--body", "hi", "--identity", setup.folder.file("alice.identity"),
                    "--pins", setup.folder.file("pins.json"), "--device-token", TestUser.token("phone"),
                    "--topic", GatewayFixture.topic, "--deliver", "--apns-url", setup.gateway.baseURL, "--apns-ca",
                    setup.relay.caPath, "--apns-key-file", try setup.gateway.writeKeyFile(), "--apns-key-id",
                    GatewayFixture.keyID, "--apns-team-id", GatewayFixture.teamID,
                ],
                timeout: .seconds(120)
            )
            #expect(result.status == 78, "\(result.stderr)")
            #expect(result.stderr.contains("--apns-ca"), "\(result.stderr)")
            #expect(Self.noDump(result.stderr), "\(result.stderr)")
            #expect(setup.gateway.sink.records.isEmpty)
        }
    }
}
