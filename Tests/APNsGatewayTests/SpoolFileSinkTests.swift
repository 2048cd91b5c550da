import APNsGateway
import Foundation
import Testing

@Suite("Spool file sink")
struct SpoolFileSinkTests {
    private func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
    }

    @Test("the record is in the file when the 200 arrives, and seq continues after a restart")
    func durableAndContinuing() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let spool = directory.file("spool.jsonl")
        for run in 1...2 {
            let sink = try SpoolFileSink(path: spool)
            try await withGateway(directory: directory.path, key: key, sink: sink) { server, port in
                let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
                defer { Task { await client.close() } }
                let bearer = try key.bearer(issuedAt: Date())
                for push in 1...2 {
                    let response = try await client.send(
                        headers: alertHeaders(authorization: bearer),
                        body: sampleBody
                    )
                    #expect(response.status == 200)
                    // Read the file now, while the server is still running: the 200 means "on disk".
                    let lines = try self.lines(spool)
                    let expectedCount = (run - 1) * 2 + push
                    try #require(lines.count == expectedCount + 1)
                    #expect(lines.last == "", "every record ends with a newline")
                    let record = try DeliveryRecord.parse(jsonLine: lines[expectedCount - 1])
                    #expect(record.seq == expectedCount)
                    #expect(record.apnsID == response.header("apns-id"))
                    #expect(record.bodyBytes == sampleBody)
                    #expect(lines[expectedCount - 1] == record.jsonLine())
                }
            }
            sink.close()
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: spool)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test("concurrent deliveries are written one line each, in seq order")
    func concurrentDeliveries() async throws {
        let directory = try TemporaryDirectory()
        let spool = directory.file("spool.jsonl")
        let sink = try SpoolFileSink(path: spool)
        let key = TestProviderKey()
        try await withGateway(directory: directory.path, key: key, sink: sink) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let bearer = try key.bearer(issuedAt: Date())
            // The first push raises the stream limit; then 20 go concurrently.
            #expect(try await client.send(headers: alertHeaders(authorization: bearer), body: sampleBody).status == 200)
            _ = await client.frames.wait { $0.maxConcurrentStreamsValues.count >= 2 }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        try await client.send(headers: alertHeaders(authorization: bearer), body: sampleBody).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 20))
        }
        let records = try self.lines(spool).dropLast().map { try DeliveryRecord.parse(jsonLine: $0) }
        #expect(records.map(\.seq) == Array(1...21))
        #expect(Set(records.map(\.apnsID)).count == 21)
    }

    @Test("a torn last line is cut off at open and the sequence continues after the last whole record")
    func tornTailRepaired() async throws {
        let directory = try TemporaryDirectory()
        let spool = directory.file("spool.jsonl")
        let whole = DeliveryRecord(
            seq: 7,
            apnsID: "8F3C2C1E-0B6A-4C4E-9D55-3E5E1F0A7B21",
            deviceToken: testToken,
            headers: ["apns-push-type": "alert"],
            bodyBytes: sampleBody,
            receivedAtMs: 1
        )
        let torn = whole.jsonLine().prefix(20)
        try Data((whole.jsonLine() + "\n" + torn).utf8).write(to: URL(fileURLWithPath: spool))
        let sink = try SpoolFileSink(path: spool)
        #expect(try await sink.lastSequence() == 7)
        #expect(try self.lines(spool) == [whole.jsonLine(), ""])
        var next = whole
        next.seq = 8
        try await sink.deliver(next)
        #expect(try self.lines(spool) == [whole.jsonLine(), next.jsonLine(), ""])
    }

    @Test("a file that is not a spool is refused")
    func notASpool() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.txt")
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: GatewayError(code: .spoolIOFailed, message: "")) {
            _ = try SpoolFileSink(path: path)
        }
    }

    @Test("a sink that fails makes the gateway answer 500 InternalServerError")
    func failingSink() async throws {
        struct FailingSink: DeliverySink {
            struct Failure: Error {}
            func deliver(_ record: DeliveryRecord) async throws { throw Failure() }
        }
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        try await withGateway(directory: directory.path, key: key, sink: FailingSink()) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let response = try await client.send(
                headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
                body: sampleBody
            )
            #expect(response.status == 500)
            #expect(response.reason == "InternalServerError")
        }
    }
}
