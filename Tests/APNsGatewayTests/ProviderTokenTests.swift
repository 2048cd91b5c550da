import APNsGateway
import Crypto
import Foundation
import PushTransport
import TestSupport
import Testing

@Suite("Provider token authentication")
struct ProviderTokenTests {
    /// Sends one alert push with `authorization` on `client`.
    private func push(_ client: H2TestClient, _ authorization: String) async throws -> H2TestClient.Response {
        try await client.send(headers: alertHeaders(authorization: authorization), body: sampleBody)
    }

    @Test("a JWT signed by another key is InvalidProviderToken")
    func badSignature() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let clock = TestClock()
        try await withGateway(directory: directory.path, key: key, clock: clock) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let forged = try key.jwt(
                iatJSON: String(Int(clock.now.timeIntervalSince1970)),
                signingKey: P256.Signing.PrivateKey()
            )
            let response = try await self.push(client, "bearer " + forged)
            #expect(response.status == 403)
            #expect(response.reason == "InvalidProviderToken")
        }
    }

    @Test("a JWT whose kid is not registered is InvalidProviderToken")
    func unknownKey() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let clock = TestClock()
        try await withGateway(directory: directory.path, key: key, clock: clock) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let token = try key.jwt(iatJSON: String(Int(clock.now.timeIntervalSince1970)), keyID: "UNKNOWN000")
            let response = try await self.push(client, "bearer " + token)
            #expect(response.status == 403)
            #expect(response.reason == "InvalidProviderToken")
        }
    }

    @Test("iat older than one hour by the gateway's clock is ExpiredProviderToken; 59 minutes is fine")
    func expiredIssuedAt() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let clock = TestClock()
        let sink = InMemoryDeliverySink()
        try await withGateway(directory: directory.path, key: key, sink: sink, clock: clock) { server, port in
            let fresh = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await fresh.close() } }
            let ok = try await self.push(fresh, try key.bearer(issuedAt: clock.now.addingTimeInterval(-59 * 60)))
            #expect(ok.status == 200)
            let stale = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await stale.close() } }
            let expired = try await self.push(stale, try key.bearer(issuedAt: clock.now.addingTimeInterval(-3601)))
            #expect(expired.status == 403)
            #expect(expired.reason == "ExpiredProviderToken")
            // The token the first connection uses also expires as the clock moves on.
            clock.advance(seconds: 2 * 60)
            let later = try await self.push(fresh, try key.bearer(issuedAt: clock.now.addingTimeInterval(-61 * 60)))
            #expect(later.status == 403)
            #expect(later.reason == "ExpiredProviderToken")
        }
        #expect(sink.records.count == 1)
    }

    @Test("iat as a string is accepted by default and refused under the numberOnly policy")
    func stringIssuedAt() async throws {
        let key = TestProviderKey()
        let clock = TestClock()
        let iat = "\"\(Int(clock.now.timeIntervalSince1970))\""
        for (policy, expected) in [(ProviderTokenPolicy.IssuedAtFormat.numberOrString, 200), (.numberOnly, 403)] {
            let directory = try TemporaryDirectory()
            let setup: (inout GatewayConfiguration) -> Void = { $0.tokenPolicy.issuedAtFormat = policy }
            try await withGateway(
                directory: directory.path,
                key: key,
                clock: clock,
                configure: setup
            ) { server, port in
                let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
                defer { Task { await client.close() } }
                let response = try await self.push(client, "bearer " + (try key.jwt(iatJSON: iat)))
                #expect(response.status == expected, "policy \(policy)")
                if expected == 403 { #expect(response.reason == "InvalidProviderToken") }
            }
        }
    }

    @Test(
        "a new token within 20 minutes is TooManyProviderTokenUpdates; the same token reused is fine; after 20 it is accepted"
    )
    func twentyMinuteRule() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let clock = TestClock()
        let sink = InMemoryDeliverySink()
        try await withGateway(directory: directory.path, key: key, sink: sink, clock: clock) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let first = try key.bearer(issuedAt: clock.now)
            #expect(try await self.push(client, first).status == 200)
            clock.advance(seconds: 10 * 60)
            #expect(try await self.push(client, first).status == 200)
            let second = try key.bearer(issuedAt: clock.now)
            let tooSoon = try await self.push(client, second)
            #expect(tooSoon.status == 429)
            #expect(tooSoon.reason == "TooManyProviderTokenUpdates")
            // The refused token did not replace the first one.
            #expect(try await self.push(client, first).status == 200)
            clock.advance(seconds: 10 * 60 + 1)
            #expect(try await self.push(client, second).status == 200)
            // A new connection may start with any valid token.
            let other = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await other.close() } }
            #expect(
                try await self.push(other, try key.bearer(issuedAt: clock.now.addingTimeInterval(-5))).status == 200
            )
        }
        #expect(sink.records.count == 5)
    }

    @Test("a key of another team than the connection's first is UnrelatedKeyIdInToken")
    func unrelatedKey() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let otherTeam = TestProviderKey(teamID: "OTHERTEAM1", keyID: "OTHERKEY01")
        let clock = TestClock()
        let setup: (inout GatewayConfiguration) -> Void = { $0.providerKeys.append(otherTeam.registered()) }
        try await withGateway(
            directory: directory.path,
            key: key,
            clock: clock,
            configure: setup
        ) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            #expect(try await self.push(client, try key.bearer(issuedAt: clock.now)).status == 200)
            clock.advance(seconds: 30 * 60)
            let response = try await self.push(client, try otherTeam.bearer(issuedAt: clock.now))
            #expect(response.status == 403)
            #expect(response.reason == "UnrelatedKeyIdInToken")
            // The other team's key works on a connection of its own.
            let own = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await own.close() } }
            #expect(try await self.push(own, try otherTeam.bearer(issuedAt: clock.now)).status == 200)
        }
    }

    @Test("a key registered for production used on a development gateway is BadEnvironmentKeyIdInToken")
    func wrongEnvironmentKey() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let setup: (inout GatewayConfiguration) -> Void = {
            $0.providerKeys = [key.registered(environment: .production)]
        }
        try await withGateway(
            directory: directory.path,
            key: key,
            configure: setup
        ) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let response = try await self.push(client, try key.bearer(issuedAt: Date()))
            #expect(response.status == 403)
            #expect(response.reason == "BadEnvironmentKeyIdInToken")
        }
    }

    @Test("a public key given as PEM or as the .p8 private key verifies the same tokens")
    func pemRegistration() throws {
        let key = P256.Signing.PrivateKey()
        let fromPublic = try RegisteredProviderKey(teamID: "T", keyID: "K", pem: key.publicKey.pemRepresentation)
        let fromPrivate = try RegisteredProviderKey(teamID: "T", keyID: "K", pem: key.pemRepresentation)
        #expect(fromPublic.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        #expect(fromPrivate.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        #expect(throws: GatewayError(code: .invalidProviderKey, message: "")) {
            _ = try RegisteredProviderKey(teamID: "T", keyID: "K", pem: "not a key")
        }
    }
}
