import APNsGateway
import E2EECore
import Foundation
import Locking
import Testing

@testable import Sender

/// The streaming pipeline under `e2ee-send batch` and `deliver`, in-process: order, flat memory, bad lines, and a
/// closed output that does not stop the deliveries asked for.
@Suite("Send pipeline: streamed, in order, bounded, output failures")
struct SendPipelineTests {
    /// A lazy input that records how many lines the pipeline has pulled.
    final class CountingLines: Sequence, IteratorProtocol {
        let lines: [String]
        var pulled = 0
        init(_ lines: [String]) { self.lines = lines }
        func next() -> String? {
            guard self.pulled < self.lines.count else { return nil }
            self.pulled += 1
            return self.lines[self.pulled - 1]
        }
    }

    static func batch() throws -> BatchRequests {
        let alice = try Identity.generate(userID: "alice", displayName: "Alice", nowMs: 1)
        let bob = try Identity.generate(userID: "bob", displayName: "Bob", nowMs: 1)
        let folder = NSTemporaryDirectory() + "pipeline-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let card = try bob.card(
            push: PushAddress(APNsAddress(topic: GatewayHarness.topic, deviceToken: GatewayHarness.deviceToken))
        )
        try Data(card.jsonData()).write(to: URL(fileURLWithPath: folder + "/bob.card.json"))
        return BatchRequests(
            builder: PushBuilder(identity: alice),
            trust: try ContactTrust(directory: ContactDirectory(folder: folder), pinsPath: nil)
        )
    }

    static func texts(_ count: Int) -> [String] {
        (1...count).map { #"{"kind":"text","to":"bob","body":"message \#($0)"}"# }
    }

    @Test("without a client: the first line is written before the second is read, and every line in order")
    func streamsWithoutClient() async throws {
        var batch = try Self.batch()
        let input = CountingLines(Self.texts(5) + ["not json", #"{"kind":"text","to":"bob","body":"last"}"#])
        var written: [(pulled: Int, line: String)] = []
        let summary = await SendPipeline(depth: 4).run(
            lines: input,
            client: nil,
            prepare: { _, line in batch.prepare(line: line) },
            output: { line in written.append((input.pulled, line)) }
        )
        #expect(summary.lines == 7)
        #expect(summary.failures == 1)
        #expect(summary.firstFailureLine == 6)
        #expect(summary.firstFailure?.code == .badRequest)
        #expect(written.count == 7)
        #expect(written.map(\.pulled) == [1, 2, 3, 4, 5, 6, 7])
        let request = try APNsRequest.parse(requestLine: written[0].line)
        #expect(request.headers["apns-topic"] == GatewayHarness.topic)
        #expect(request.body.utf8.count == 2233)
        #expect(written[5].line.contains(#""error":"bad-request""#) && written[5].line.contains(#""line":6"#))
    }

    @Test("delivering: results in input order, and never more than depth lines read ahead of the output")
    func deliversInOrderWithBoundedReadAhead() async throws {
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient(window: 8)
            var batch = try Self.batch()
            let input = CountingLines(Self.texts(200))
            let depth = 16
            var written: [(pulled: Int, line: SendResultLine)] = []
            let summary = await SendPipeline(depth: depth).run(
                lines: input,
                client: client,
                prepare: { _, line in batch.prepare(line: line) },
                output: { line in
                    written.append(
                        (input.pulled, try! JSONDecoder().decode(SendResultLine.self, from: Data(line.utf8)))
                    )
                }
            )
            #expect(summary.lines == 200)
            #expect(summary.failures == 0)
            #expect(summary.outputError == nil)
            #expect(written.map(\.line.line) == Array(1...200))
            #expect(written.allSatisfy { $0.line.ok && $0.line.status == 200 && $0.line.messageID != nil })
            // When result k was written, at most depth lines after it had been read.
            for (index, entry) in written.enumerated() {
                #expect(entry.pulled - (index + 1) <= depth, "result \(index + 1) written with \(entry.pulled) read")
            }
            #expect(gateway.sink.records.count == 200)
        }
    }

    @Test("fan-out: one result per device in input order, each naming its device; read-ahead stays bounded")
    func fanOutInOrderWithBoundedReadAhead() async throws {
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient(window: 4)
            let d = try Devices()
            var batch = BatchRequests(builder: PushBuilder(identity: d.alice), trust: try d.trust())
            let input = CountingLines(Self.texts(60))
            let depth = 8
            var written: [(pulled: Int, line: SendResultLine)] = []
            let summary = await SendPipeline(depth: depth).run(
                lines: input,
                client: client,
                prepare: { _, line in batch.prepare(line: line) },
                output: { line in
                    written.append(
                        (input.pulled, try! JSONDecoder().decode(SendResultLine.self, from: Data(line.utf8)))
                    )
                }
            )
            #expect(summary.lines == 60)
            #expect(summary.results == 120)
            #expect(summary.failures == 0)
            #expect(written.map(\.line.line) == (1...60).flatMap { [$0, $0] })
            #expect(written.map(\.line.device) == Array(repeating: ["phone", "tablet"], count: 60).flatMap { $0 })
            #expect(written.allSatisfy { $0.line.ok })
            // Both devices of a line carry one message id; lines differ.
            for pair in stride(from: 0, to: 120, by: 2) {
                #expect(written[pair].line.messageID == written[pair + 1].line.messageID)
            }
            #expect(Set(written.map(\.line.messageID)).count == 60)
            // When result k was written, at most depth results (plus one line's second device) had been read
            // beyond it.
            for (index, entry) in written.enumerated() {
                #expect(
                    2 * entry.pulled - (index + 1) <= depth + 1,
                    "result \(index + 1) with \(entry.pulled) lines read"
                )
            }
            #expect(gateway.sink.records.count == 120)
            #expect(Set(gateway.sink.records.map(\.deviceToken)) == [Devices.phoneToken, Devices.tabletToken])
        }
    }

    @Test("--window 1: pushes reach APNs strictly in input order, fan-out included")
    func windowOneKeepsInputOrder() async throws {
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient(window: 1)
            let d = try Devices()
            var batch = BatchRequests(builder: PushBuilder(identity: d.alice), trust: try d.trust())
            var sent: [String] = []
            let summary = await SendPipeline(depth: 2).run(
                lines: Self.texts(40),
                client: client,
                prepare: { _, line in batch.prepare(line: line) },
                output: { line in
                    let result = try! JSONDecoder().decode(SendResultLine.self, from: Data(line.utf8))
                    sent.append(result.apnsID ?? "")
                }
            )
            #expect(summary.results == 80)
            #expect(summary.failures == 0)
            // The gateway saw the pushes in exactly the order of the results (input order, phone then tablet).
            #expect(gateway.sink.records.map { $0.apnsID.lowercased() } == sent.map { $0.lowercased() })
        }
    }

    @Test("a closed output does not stop deliveries: every push goes out, every result is counted unwritten")
    func closedOutputStillDelivers() async throws {
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient()
            var batch = try Self.batch()
            let summary = await SendPipeline(depth: 8).run(
                lines: Self.texts(30),
                client: client,
                prepare: { _, line in batch.prepare(line: line) },
                output: { _ throws(SenderError) in
                    throw SenderError(.outputFailed, "cannot write to standard output (the reader closed the pipe)")
                }
            )
            #expect(summary.outputError?.code == .outputFailed)
            #expect(summary.unwritten == 30)
            #expect(summary.failures == 0)
            #expect(gateway.sink.records.count == 30)
        }
    }

    @Test("printing: the first output failure ends the run (nothing more is sealed for nobody)")
    func closedOutputStopsPrinting() async throws {
        var batch = try Self.batch()
        let input = CountingLines(Self.texts(50))
        let summary = await SendPipeline(depth: 8).run(
            lines: input,
            client: nil,
            prepare: { _, line in batch.prepare(line: line) },
            output: { _ throws(SenderError) in throw SenderError(.outputFailed, "closed") }
        )
        #expect(summary.outputError?.code == .outputFailed)
        #expect(input.pulled == 1)
        #expect(summary.unwritten == 1)
    }

    @Test("deliver's request lines: sent unchanged, a bad line gets bad-request and the run goes on")
    func requestLines() async throws {
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient()
            let good = GatewayHarness.push().jsonLine()
            var written: [SendResultLine] = []
            let summary = await SendPipeline(depth: 4).run(
                lines: [good, "{}", good],
                client: client,
                prepare: { _, line in BatchRequests.prepareRequestLine(line, formats: [APNsFormat()]) },
                output: { line in written.append(try! JSONDecoder().decode(SendResultLine.self, from: Data(line.utf8)))
                }
            )
            #expect(summary.lines == 3)
            #expect(summary.failures == 1)
            #expect(written.map(\.ok) == [true, false, true])
            #expect(written[1].error == "bad-request")
            #expect(gateway.sink.records.count == 2)
        }
    }

    // MARK: sealing on several cores (`e2ee-send batch`)

    @Test(
        "sealing several lines at once: results in input order, read-ahead bounded, every push delivered once",
        arguments: [1, 2, 4]
    )
    func parallelSealingInOrder(sealers: Int) async throws {
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient(window: 8)
            var batch = try Self.batch()
            let sealer = batch
            let input = CountingLines(Self.texts(200) + ["not json"] + Self.texts(20))
            let depth = 16
            var written: [(pulled: Int, line: SendResultLine)] = []
            let summary = await SendPipeline(depth: depth).run(
                lines: input,
                client: client,
                sealers: sealers,
                stage: { _, line in batch.stage(line: line) },
                seal: { sealer.seal($0) },
                output: { line in
                    written.append(
                        (input.pulled, try! JSONDecoder().decode(SendResultLine.self, from: Data(line.utf8)))
                    )
                }
            )
            #expect(summary.lines == 221)
            #expect(summary.results == 221)
            #expect(summary.failures == 1)
            #expect(summary.firstFailureLine == 201)
            #expect(summary.firstFailure?.code == .badRequest)
            #expect(written.map(\.line.line) == Array(1...221))
            #expect(written[200].line.error == "bad-request")
            #expect(
                written.enumerated().allSatisfy {
                    $0.offset == 200 || ($0.element.line.ok && $0.element.line.status == 200)
                }
            )
            for (index, entry) in written.enumerated() {
                #expect(entry.pulled - (index + 1) <= depth, "result \(index + 1) written with \(entry.pulled) read")
            }
            // Every push reached APNs once, with the message id its result line names.
            let delivered = gateway.sink.records.map { $0.apnsID.lowercased() }
            #expect(delivered.count == 220)
            #expect(Set(delivered) == Set(written.compactMap { $0.line.apnsID?.lowercased() }))
        }
    }

    @Test("sealing several lines at once with --window 1: pushes still reach APNs strictly in input order")
    func parallelSealingWindowOne() async throws {
        try await GatewayHarness.with { gateway in
            let client = try gateway.makeClient(window: 1)
            let d = try Devices()
            var batch = BatchRequests(builder: PushBuilder(identity: d.alice), trust: try d.trust())
            let sealer = batch
            var sent: [String] = []
            var lines: [Int] = []
            let summary = await SendPipeline(depth: 6).run(
                lines: Self.texts(40),
                client: client,
                sealers: 3,
                stage: { _, line in batch.stage(line: line) },
                seal: { sealer.seal($0) },
                output: { line in
                    let result = try! JSONDecoder().decode(SendResultLine.self, from: Data(line.utf8))
                    sent.append(result.apnsID ?? "")
                    lines.append(result.line)
                }
            )
            #expect(summary.results == 80)
            #expect(summary.failures == 0)
            #expect(lines == (1...40).flatMap { [$0, $0] })
            #expect(gateway.sink.records.map { $0.apnsID.lowercased() } == sent.map { $0.lowercased() })
        }
    }

    @Test("sealing several lines at once while printing: request lines in order; a closed output ends the run")
    func parallelSealingPrinting() async throws {
        var batch = try Self.batch()
        let sealer = batch
        var printed: [String] = []
        let summary = await SendPipeline(depth: 8).run(
            lines: Self.texts(30),
            client: nil,
            sealers: 2,
            stage: { _, line in batch.stage(line: line) },
            seal: { sealer.seal($0) },
            output: { printed.append($0) }
        )
        #expect(summary.lines == 30 && summary.failures == 0)
        #expect(printed.count == 30)
        // One request line per input line, each a distinct full-size push.
        let bodies = try printed.map { try APNsRequest.parse(requestLine: $0).body }
        #expect(bodies.allSatisfy { $0.utf8.count == 2233 })
        #expect(Set(bodies).count == 30)

        var closed = try Self.batch()
        let closedSealer = closed
        let input = CountingLines(Self.texts(50))
        var readWhenClosed: [Int] = []
        let stopped = await SendPipeline(depth: 8).run(
            lines: input,
            client: nil,
            sealers: 2,
            stage: { _, line in closed.stage(line: line) },
            seal: { closedSealer.seal($0) },
            output: { _ throws(SenderError) in
                readWhenClosed.append(input.pulled)
                throw SenderError(.outputFailed, "closed")
            }
        )
        #expect(stopped.outputError?.code == .outputFailed)
        // The output is tried once. The lines read before it closed (at most the depth: how many depends on which
        // seals end first, since line 1 may be sealed after lines read behind it) are finished and counted as
        // unwritten; nothing more is read.
        #expect(readWhenClosed.count == 1)
        #expect(input.pulled == readWhenClosed.first)
        #expect(input.pulled >= 1 && input.pulled <= 8)
        #expect(stopped.unwritten == input.pulled)
    }

    /// A push of a service of the tests' own.
    struct FakePush: OutgoingPush {
        var text: String
        var service = PushService(rawValue: "fake")
        func jsonLine(device: String?) -> String { #"{"fake":"\#(self.text)"}"# }
    }

    /// A client of that service: records what it sends and answers 200.
    final class FakeClient: PushClient {
        let maximumInFlight: Int
        private let sent = PThreadMutex<[String]>([])
        /// What its answers' device tokens start with.
        let prefix: String
        private let shutdowns = PThreadMutex(0)
        init(maximumInFlight: Int, prefix: String = "fake") {
            self.maximumInFlight = maximumInFlight
            self.prefix = prefix
        }
        var sentTexts: [String] { self.sent.withLock { $0 } }
        var shutdownCount: Int { self.shutdowns.withLock { $0 } }
        func shutdown() async { self.shutdowns.withLock { $0 += 1 } }

        func send(_ push: any OutgoingPush, line: Int, messageID: MessageID?, device: String?) async -> SendResultLine {
            guard let push = push as? FakePush else {
                return SendResultLine(line: line, error: SenderError(.unsupportedPushService, "not fake"))
            }
            self.sent.withLock { $0.append(push.text) }
            return SendResultLine(
                line: line,
                result: APNsResult(deviceToken: "\(self.prefix)-\(push.text)", status: 200, attempts: 1),
                messageID: messageID,
                device: device
            )
        }
    }

    @Test("another service's client: the pipeline delivers through it in input order, each push once, or prints it")
    func anotherServicesClient() async throws {
        let texts = (1...12).map { "p\($0)" }
        for window in [1, 4] {
            let client = FakeClient(maximumInFlight: window)
            var written: [String] = []
            let summary = await SendPipeline(depth: 6).run(
                lines: texts,
                client: client,
                prepare: { _, line in [.deliver(FakePush(text: line), messageID: nil)] },
                output: { written.append($0) }
            )
            #expect(summary.failures == 0)
            #expect(summary.results == 12)
            // Written in input order whatever order the answers came in; sent in input order with one in flight.
            let lines = written.map { try? JSONDecoder().decode(SendResultLine.self, from: Data($0.utf8)) }
            #expect(lines.map { $0?.line } == Array(1...12))
            #expect(lines.map { $0?.deviceToken } == texts.map { "fake-\($0)" })
            if window == 1 {
                #expect(client.sentTexts == texts)
            } else {
                #expect(client.sentTexts.sorted() == texts.sorted())
            }
        }
        var printed: [String] = []
        _ = await SendPipeline(depth: 6).run(
            lines: texts,
            client: nil,
            prepare: { _, line in [.deliver(FakePush(text: line), messageID: nil)] },
            output: { printed.append($0) }
        )
        #expect(printed == texts.map { #"{"fake":"\#($0)"}"# })
    }

    @Test("clients of two services as one: each push goes to its service's client, a third service's is refused unsent")
    func clientsByService() async throws {
        let fake = FakeClient(maximumInFlight: 1)
        let other = FakeClient(maximumInFlight: 4, prefix: "other")
        let clients = PushClients([PushService(rawValue: "fake"): fake, PushService(rawValue: "other"): other])
        #expect(clients.maximumInFlight == 4)
        let services = ["fake", "other", "third", "fake", "other"]
        var written: [String] = []
        let summary = await SendPipeline(depth: 4).run(
            lines: services,
            client: clients,
            prepare: { number, service in
                let push = FakePush(text: "p\(number)", service: PushService(rawValue: service))
                return [.deliver(push, messageID: nil, device: "d\(number)")]
            },
            output: { written.append($0) }
        )
        #expect(summary.results == 5)
        #expect(summary.failures == 1)
        #expect(summary.firstFailureLine == 3)
        #expect(summary.firstFailure?.code == .unsupportedPushService)
        #expect(
            summary.firstFailure?.message
                == "the push for line 3 goes to third, and this sender delivers to fake, other only"
        )
        #expect(fake.sentTexts == ["p1", "p4"])
        #expect(other.sentTexts.sorted() == ["p2", "p5"])
        let lines = written.map { try? JSONDecoder().decode(SendResultLine.self, from: Data($0.utf8)) }
        #expect(lines.map { $0?.line } == [1, 2, 3, 4, 5])
        #expect(lines.map { $0?.device } == ["d1", "d2", "d3", "d4", "d5"])
        #expect(lines.map { $0?.deviceToken } == ["fake-p1", "other-p2", nil, "fake-p4", "other-p5"])
        #expect(lines.map { $0?.ok } == [true, true, false, true, true])
        await clients.shutdown()
        #expect(fake.shutdownCount == 1)
        #expect(other.shutdownCount == 1)
    }

    @Test("the APNs client refuses a push of another service: unsupported-push-service, nothing sent, no connection")
    func apnsClientRefusesAnotherServicesPush() async throws {
        let client = try APNsClientTransportTests.client(baseURL: "https://127.0.0.1:9", caPath: nil)
        let line = await client.send(FakePush(text: "x"), line: 3, messageID: nil, device: "watch")
        #expect(line.ok == false)
        #expect(line.line == 3)
        #expect(line.device == "watch")
        #expect(line.failure?.code == .unsupportedPushService)
        #expect(client.connectionsOpened.http2 == 0)
        await client.shutdown()
    }
}
