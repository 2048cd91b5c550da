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
            send the same push twice. Delivery is implied (--deliver changes nothing). Input is streamed: each \
            line is sent as soon as it is read, memory stays flat, and results come in input order as soon as \
            they are known; pushes go out concurrently up to --window, so pass --window 1 to keep the input order \
            on the wire. A line that is not a request gets an error result line (bad-request) and the run goes \
            on. Exit status: 0 when every line was delivered, 74 when stdout could not be written, else the exit \
            code of the first failed line.
            \(E2EESend.exitCodes)
            """
    )
    @OptionGroup var delivery: DeliveryOptions

    func run() async throws {
        try await runCLI {
            let client = try self.delivery.makeClient()
            let formats = SendPushServices.formats(topic: nil)
            let summary = await SendPipeline(depth: self.delivery.pipelineDepth).run(
                lines: StandardInputLines(),
                client: client,
                prepare: { _, line in BatchRequests.prepareRequestLine(line, formats: formats) },
                output: printLine
            )
            await client.shutdown()
            try finish(summary)
        }
    }
}
