import APNsGateway
import Foundation
import NIOHTTP2
import Testing

@Suite("Stream limits and fault injection")
struct StreamLimitAndFaultTests {
    @Test("one stream until a valid token succeeds, then the configured limit")
    func oneStreamBeforeFirstValidToken() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let setup: (inout GatewayConfiguration) -> Void = { $0.maxConcurrentStreams = 750 }
        try await withGateway(
            directory: directory.path,
            key: key,
            configure: setup
        ) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let initial = await client.frames.wait { !$0.maxConcurrentStreamsValues.isEmpty }
            #expect(initial.maxConcurrentStreamsValues == [1])
            let refused = try await client.send(headers: alertHeaders(authorization: "bearer x.y.z"), body: sampleBody)
            #expect(refused.status == 403)
            #expect(client.frames.snapshot.maxConcurrentStreamsValues == [1], "a failed request raises nothing")
            let accepted = try await client.send(
                headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
                body: sampleBody
            )
            #expect(accepted.status == 200)
            let raised = await client.frames.wait { $0.maxConcurrentStreamsValues.count >= 2 }
            #expect(raised.maxConcurrentStreamsValues == [1, 750])
            _ = try await client.send(
                headers: alertHeaders(authorization: try key.bearer(issuedAt: Date().addingTimeInterval(-1))),
                body: sampleBody
            )
            #expect(client.frames.snapshot.maxConcurrentStreamsValues == [1, 750], "raised once per connection")
        }
    }

    @Test("a stream-limit drop sends the lower limit after the configured number of streams")
    func streamLimitDrop() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let setup: (inout GatewayConfiguration) -> Void = {
            $0.faults.streamLimitDrop = FaultInjection.StreamLimitDrop(afterStreams: 2, maxConcurrentStreams: 3)
        }
        try await withGateway(
            directory: directory.path,
            key: key,
            configure: setup
        ) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let bearer = try key.bearer(issuedAt: Date())
            for _ in 0..<2 {
                #expect(
                    try await client.send(headers: alertHeaders(authorization: bearer), body: sampleBody).status == 200
                )
            }
            let frames = await client.frames.wait { $0.maxConcurrentStreamsValues.count >= 3 }
            #expect(frames.maxConcurrentStreamsValues == [1, 1000, 3])
            #expect(try await client.send(headers: alertHeaders(authorization: bearer), body: sampleBody).status == 200)
        }
    }

    @Test("GOAWAY with a JSON reason after N streams; later streams are refused and not delivered")
    func goAwayAfterStreams() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let sink = InMemoryDeliverySink()
        let setup: (inout GatewayConfiguration) -> Void = {
            $0.faults.goAway = FaultInjection.GoAway(afterStreams: 2, reason: "Shutdown")
        }
        try await withGateway(
            directory: directory.path,
            key: key,
            sink: sink,
            configure: setup
        ) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let bearer = try key.bearer(issuedAt: Date())
            for _ in 0..<2 {
                #expect(
                    try await client.send(headers: alertHeaders(authorization: bearer), body: sampleBody).status == 200
                )
            }
            let frames = await client.frames.wait { !$0.goAwayReasons.isEmpty }
            #expect(frames.goAwayReasons == [#"{"reason":"Shutdown"}"#])
            #expect(frames.goAwayLastStreamIDs == [3])
            await #expect(throws: (any Error).self) {
                _ = try await client.send(headers: alertHeaders(authorization: bearer), body: sampleBody)
            }
            // A new connection works again (and gets its own GOAWAY budget).
            let again = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await again.close() } }
            #expect(try await again.send(headers: alertHeaders(authorization: bearer), body: sampleBody).status == 200)
        }
        #expect(sink.records.count == 3)
    }

    @Test(
        "a fault rate of 1 answers every valid push with that status and delivers nothing",
        arguments: [
            (FaultInjection(tooManyRequestsRate: 1), 429, "TooManyRequests"),
            (FaultInjection(internalServerErrorRate: 1), 500, "InternalServerError"),
            (FaultInjection(serviceUnavailableRate: 1), 503, "ServiceUnavailable"),
        ]
    )
    func certainFault(faults: FaultInjection, status: Int, reason: String) async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let sink = InMemoryDeliverySink()
        let setup: (inout GatewayConfiguration) -> Void = { $0.faults = faults }
        try await withGateway(directory: directory.path, key: key, sink: sink, configure: setup) {
            server,
            port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let bearer = try key.bearer(issuedAt: Date())
            for _ in 0..<3 {
                let response = try await client.send(headers: alertHeaders(authorization: bearer), body: sampleBody)
                #expect(response.status == status)
                #expect(response.reason == reason)
            }
            // Validation errors still win over faults.
            let invalid = try await client.send(headers: alertHeaders(authorization: bearer), body: nil)
            #expect(invalid.reason == "PayloadEmpty")
        }
        #expect(sink.records.isEmpty)
    }

    @Test("mixed fault rates are deterministic for a seed, and only the 200s are delivered")
    func seededFaultsAreDeterministic() async throws {
        let key = TestProviderKey()
        let faults = FaultInjection(seed: 42, tooManyRequestsRate: 0.2, serviceUnavailableRate: 0.3)
        var runs: [[Int]] = []
        for _ in 0..<2 {
            let directory = try TemporaryDirectory()
            let sink = InMemoryDeliverySink()
            let setup: (inout GatewayConfiguration) -> Void = { $0.faults = faults }
            let statuses: [Int] = try await withGateway(
                directory: directory.path,
                key: key,
                sink: sink,
                configure: setup
            ) { server, port in
                let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
                defer { Task { await client.close() } }
                let bearer = try key.bearer(issuedAt: Date())
                var statuses: [Int] = []
                for _ in 0..<30 {
                    statuses.append(
                        try await client.send(headers: alertHeaders(authorization: bearer), body: sampleBody).status
                    )
                }
                return statuses
            }
            #expect(sink.records.count == statuses.filter { $0 == 200 }.count)
            runs.append(statuses)
        }
        #expect(runs[0] == runs[1])
        #expect(Set(runs[0]) == [200, 429, 503])
    }

    @Test("a silent fault never answers the stream and delivers nothing")
    func silentStream() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let sink = InMemoryDeliverySink()
        let setup: (inout GatewayConfiguration) -> Void = { $0.faults.silentRate = 1 }
        try await withGateway(
            directory: directory.path,
            key: key,
            sink: sink,
            configure: setup
        ) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            await #expect(throws: H2TestClient.ResponseTimedOut.self) {
                _ = try await client.send(
                    headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
                    body: sampleBody,
                    timeout: .seconds(2)
                )
            }
        }
        #expect(sink.records.isEmpty)
    }

    @Test("a response delay holds the answer back at least that long")
    func responseDelay() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let setup: (inout GatewayConfiguration) -> Void = { $0.faults.responseDelay = .milliseconds(400) }
        try await withGateway(
            directory: directory.path,
            key: key,
            configure: setup
        ) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let start = ContinuousClock.now
            let response = try await client.send(
                headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
                body: sampleBody
            )
            #expect(response.status == 200)
            #expect(ContinuousClock.now - start >= .milliseconds(400))
        }
    }

    @Test("invalid fault configurations are refused at start")
    func invalidFaults() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        await #expect(throws: GatewayError(code: .invalidConfiguration, message: "")) {
            let setup: (inout GatewayConfiguration) -> Void = {
                $0.faults = FaultInjection(tooManyRequestsRate: 0.7, serviceUnavailableRate: 0.7)
            }
            try await withGateway(
                directory: directory.path,
                key: key,
                configure: setup
            ) { _, _ in }
        }
    }
}
