import APNsGateway
import Foundation
import TestSupport
import Testing

@Suite("Accepted pushes")
struct AcceptedPushTests {
    @Test("an accepted push lands in the sink byte for byte, with its apns-* headers and no authorization")
    func acceptedPushLandsInSink() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let clock = TestClock()
        let sink = InMemoryDeliverySink()
        let apnsID = "8F3C2C1E-0B6A-4C4E-9D55-3E5E1F0A7B21"
        try await withGateway(directory: directory.path, key: key, sink: sink, clock: clock) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let response = try await client.send(
                headers: alertHeaders(authorization: try key.bearer(issuedAt: clock.now), apnsID: apnsID)
                    + [("apns-collapse-id", "c1"), ("x-other", "ignored")],
                body: sampleBody
            )
            #expect(response.status == 200)
            #expect(response.body.isEmpty)
            #expect(response.header("apns-id") == apnsID)
            let uniqueID = try #require(response.header("apns-unique-id"))
            #expect(UUID(uuidString: uniqueID) != nil)
        }
        let records = sink.records
        try #require(records.count == 1)
        let record = records[0]
        #expect(record.seq == 1)
        #expect(record.apnsID == apnsID)
        #expect(record.deviceToken == testToken)
        #expect(record.bodyBytes == sampleBody)
        #expect(record.body == String(decoding: sampleBody, as: UTF8.self))
        #expect(record.bodyBase64 == nil)
        #expect(record.receivedAtMs == Int64(clock.now.timeIntervalSince1970 * 1000))
        #expect(
            record.headers == [
                "apns-push-type": "alert", "apns-topic": testTopic, "apns-priority": "10", "apns-expiration": "0",
                "apns-id": apnsID, "apns-collapse-id": "c1",
            ]
        )
    }

    @Test("a push without apns-id gets a generated canonical one, echoed and recorded")
    func generatedAPNsID() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let sink = InMemoryDeliverySink()
        let setup: (inout GatewayConfiguration) -> Void = { $0.environment = .production }
        let echoed: String = try await withGateway(
            directory: directory.path,
            key: key,
            sink: sink,
            configure: setup
        ) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let response = try await client.send(
                headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
                body: sampleBody
            )
            #expect(response.status == 200)
            #expect(response.header("apns-unique-id") == nil, "apns-unique-id is a development-only header")
            return try #require(response.header("apns-id"))
        }
        #expect(UUID(uuidString: echoed) != nil)
        #expect(sink.records.map(\.apnsID) == [echoed])
        #expect(sink.records.first?.headers["apns-id"] == nil)
    }

    @Test("a body that is not UTF-8 is recorded as body_base64 and the JSON line keeps keys sorted")
    func binaryBodyRecordedAsBase64() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        let sink = InMemoryDeliverySink()
        let body: [UInt8] = [0xff, 0xfe, 0x00, 0x7b]
        try await withGateway(directory: directory.path, key: key, sink: sink) { server, port in
            let client = try await H2TestClient.connect(port: port, caPath: server.caCertificatePath)
            defer { Task { await client.close() } }
            let response = try await client.send(
                headers: alertHeaders(authorization: try key.bearer(issuedAt: Date())),
                body: body
            )
            #expect(response.status == 200)
        }
        let record = try #require(sink.records.first)
        #expect(record.body == nil)
        #expect(record.bodyBase64 == "//4Aew==")
        #expect(record.bodyBytes == body)
        let line = record.jsonLine()
        #expect(!line.contains("\n"))
        #expect(line.hasPrefix(#"{"apns_id":""#))
        let keys = ["apns_id", "body_base64", "device_token", "headers", "received_at_ms", "seq"]
        let positions = keys.map { line.range(of: "\"\($0)\":")?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil })
        #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted())
        #expect(try DeliveryRecord.parse(jsonLine: line) == record)
    }

    @Test("ca.pem is written and is the only trust a client needs; private keys are not written")
    func certificatesWritten() async throws {
        let directory = try TemporaryDirectory()
        let key = TestProviderKey()
        try await withGateway(directory: directory.path, key: key) { server, _ in
            let ca = try String(contentsOfFile: server.caCertificatePath, encoding: .utf8)
            #expect(ca.hasPrefix("-----BEGIN CERTIFICATE-----"))
            let files = try FileManager.default.contentsOfDirectory(
                atPath: (server.caCertificatePath as NSString).deletingLastPathComponent
            )
            #expect(files.sorted() == ["ca.pem", "server.pem"])
            for file in files {
                let text = try String(
                    contentsOfFile: directory.file("tls/\(file)"),
                    encoding: .utf8
                )
                #expect(!text.contains("PRIVATE KEY"))
            }
        }
    }
}
