import ArgumentParser
import Foundation
import Sender

/// `e2ee-send deliver`: sends APNs request lines exactly as they are (inspect a push, then send it).
struct Deliver: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read APNs request lines on stdin and deliver each as it is; print one result line each, in order.",
        discussion: """
            Each line is what e2ee-send call|cancel|text|receipt|batch print without --deliver: \
            {"body":"...","device_token":"<hex>","headers":{...}}. The body bytes and every header, apns-id \
            included, go out unchanged: nothing is re-sealed, so a person can inspect a push and then send it, or \
            send the same push twice. Delivery is implied (--deliver changes nothing); pushes go out concurrently \
            up to --window, so pass --window 1 to keep the input order on the wire. A line that is not a request \
            gets an error result line (bad-request) and the run goes on. Exit status: 0 when every line was \
            delivered, else the exit code of the first failed line.
            """
    )
    @OptionGroup var delivery: DeliveryOptions

    func run() async throws {
        try await runCLI { try await self.runDeliver() }
    }

    func runDeliver() async throws {
        var parsed: [(line: Int, request: APNsRequest?, error: SenderError?)] = []
        var number = 0
        while let text = readLine(strippingNewline: true) {
            if text.allSatisfy(\.isWhitespace) { continue }
            number += 1
            do {
                parsed.append((number, try APNsRequest.parse(requestLine: text), nil))
            } catch {
                parsed.append((number, nil, error))
            }
        }
        let requests = parsed.compactMap(\.request)
        var results: [APNsResult] = []
        if !requests.isEmpty {
            let client = try self.delivery.makeClient()
            results = await client.send(requests)
            await client.shutdown()
        }
        var next = results.makeIterator()
        var lines: [SendResultLine] = []
        for item in parsed {
            if item.request != nil, let result = next.next() {
                lines.append(SendResultLine(line: item.line, result: result, messageID: nil))
            } else {
                let error = item.error ?? SenderError(.deliveryFailed, "no result for line \(item.line)")
                lines.append(SendResultLine(line: item.line, error: error))
            }
        }
        for line in lines { printLine(line.jsonLine()) }
        if let failed = lines.first(where: { $0.failure != nil }), let failure = failed.failure {
            note("e2ee-send: error: line \(failed.line): \(failure.message)")
            throw ExitCode(failure.code.exitCode)
        }
    }
}
