public import E2EECore

/// What one input line of a pipeline becomes.
public enum PipelineItem: Sendable {
    /// A request to deliver; `messageID` (when the pipeline sealed it) goes into the result line.
    case deliver(APNsRequest, messageID: MessageID?)
    /// A line to print as it is (a request line, when not delivering).
    case print(String)
    /// The line could not be turned into a request.
    case failed(SenderError)
}

/// How a pipeline run ended.
public struct PipelineSummary: Sendable, Hashable {
    /// Input lines that were not blank.
    public var lines = 0
    /// Lines whose result is a failure (bad line, APNs refusal, delivery failure).
    public var failures = 0
    /// The first failed line and its error: the run's exit status is that error's.
    public var firstFailure: SenderError?
    public var firstFailureLine: Int?
    /// The first error writing output (the reader closed the pipe): results after it were not written.
    public var outputError: SenderError?
    /// Result lines that could not be written because of ``outputError``.
    public var unwritten = 0

    public init() {}
}

/// The streaming pipeline under `e2ee-send batch` and `deliver`: lines in, one result line out per line, in input
/// order, with flat memory however long the input is.
///
/// Reading and sealing happen on the calling task while earlier pushes are in flight on the client's connection,
/// so sealing and delivery overlap (two cores: one seals, the event loop delivers). At most ``depth`` lines are
/// read and not yet written; a result is written as soon as every earlier line has its result.
///
/// Output errors (a closed pipe) do not stop deliveries that were asked for: the pushes go out, the results that
/// could not be written are counted in ``PipelineSummary/unwritten``, and the run ends with
/// ``PipelineSummary/outputError``. Without a client (printing requests), the first output error ends the run.
public struct SendPipeline: Sendable {
    /// The most lines read and not yet written (in flight, or waiting for an earlier result) at once.
    public var depth: Int

    public init(depth: Int = 256) {
        precondition(depth >= 1, "the pipeline holds at least one push")
        self.depth = depth
    }

    /// Runs the pipeline.
    ///
    /// - Parameters:
    ///   - lines: the input, read lazily; blank lines are skipped and not numbered.
    ///   - client: the APNs client that delivers `.deliver` items; `nil` prints them as request lines.
    ///   - prepare: turns line number `n` (1-based) and its text into an item; runs on the calling task.
    ///   - output: writes one result line; a thrown ``SenderError`` is an output failure.
    /// - Returns: counts and the first failure.
    public func run(
        lines: some Sequence<String>,
        client: APNsClient?,
        prepare: (Int, String) -> PipelineItem,
        output: (String) throws(SenderError) -> Void
    ) async -> PipelineSummary {
        var summary = PipelineSummary()
        var ready: [Int: SendResultLine] = [:]
        var printable: [Int: String] = [:]
        var nextToWrite = 1

        func record(_ number: Int, _ line: SendResultLine) {
            if let failure = line.failure {
                summary.failures += 1
                if summary.firstFailure == nil {
                    summary.firstFailure = failure
                    summary.firstFailureLine = number
                }
            }
            ready[number] = line
        }
        func flush() {
            while true {
                let text: String
                if let line = ready.removeValue(forKey: nextToWrite) {
                    text = line.jsonLine()
                } else if let line = printable.removeValue(forKey: nextToWrite) {
                    text = line
                } else {
                    return
                }
                nextToWrite += 1
                if summary.outputError != nil {
                    summary.unwritten += 1
                    continue
                }
                do {
                    try output(text)
                } catch {
                    summary.outputError = error
                    summary.unwritten += 1
                }
            }
        }

        await withTaskGroup(of: (Int, SendResultLine).self) { group in
            var number = 0
            for text in lines {
                if text.allSatisfy(\.isWhitespace) { continue }
                number += 1
                summary.lines = number
                switch prepare(number, text) {
                case .failed(let error):
                    record(number, SendResultLine(line: number, error: error))
                case .print(let line):
                    printable[number] = line
                case .deliver(let request, let messageID):
                    if let client {
                        group.addTask { [number] in
                            (
                                number,
                                SendResultLine(line: number, result: await client.send(request), messageID: messageID)
                            )
                        }
                    } else {
                        printable[number] = request.jsonLine()
                    }
                }
                flush()
                if client == nil, summary.outputError != nil { break }
                // Lines read but not yet written (in flight, or done and waiting for an earlier one) stay under
                // the depth: memory is bounded even when one early push is slow.
                while number - (nextToWrite - 1) >= self.depth, let (done, line) = await group.next() {
                    record(done, line)
                    flush()
                }
            }
            while let (done, line) = await group.next() {
                record(done, line)
                flush()
            }
        }
        return summary
    }
}

/// Standard input as a lazy sequence of lines (newline stripped), for ``SendPipeline``.
public struct StandardInputLines: Sequence, IteratorProtocol, Sendable {
    public init() {}
    public mutating func next() -> String? { readLine(strippingNewline: true) }
}
