public import E2EECore

/// One result of an input line: a line becomes one item per recipient device (fan-out, docs/PROTOCOL.md §11.7),
/// or one item for a line that names no device.
public enum PipelineItem: Sendable {
    /// A request to deliver; `messageID` (when the pipeline sealed it) and `device` go into the result line.
    case deliver(any OutgoingPush, messageID: MessageID?, device: String? = nil)
    /// A line to print as it is (a request line, when not delivering).
    case print(String)
    /// The line (or, with `device`, that device's push) could not be turned into a request.
    case failed(SenderError, device: String? = nil)
    /// The device gets no push and that is no failure (the sender's own device without a push address): a result
    /// line with `"skipped"`.
    case skipped(String, messageID: MessageID, device: String)
}

/// How a pipeline run ended.
public struct PipelineSummary: Sendable, Hashable {
    /// Input lines that were not blank.
    public var lines = 0
    /// Results that are failures (bad line, refused recipient, a device without a push address, APNs refusal,
    /// delivery failure); a line has one result per recipient device.
    public var failures = 0
    /// The first failed result (in output order) and its line: the run's exit status is that error's.
    public var firstFailure: SenderError?
    public var firstFailureLine: Int?
    /// The first error writing output (the reader closed the pipe): results after it were not written.
    public var outputError: SenderError?
    /// Results written or not (one per item: a line fanned out to N devices has N).
    public var results = 0
    /// Result lines that could not be written because of ``outputError``.
    public var unwritten = 0

    public init() {}
}

/// The streaming pipeline under `e2ee-send batch` and `deliver`: lines in, one result line out per item (one per
/// line, or one per recipient device when a line fans out), in input order, with flat memory however long the
/// input is.
///
/// Lines are read and staged (parsed, recipient checked) on the calling task in input order; sealing runs either
/// there too (``run(lines:client:prepare:output:)``) or for several lines at once on the concurrency pool
/// (``run(lines:client:sealers:stage:seal:output:)``, what `e2ee-send batch` uses: every core seals), while
/// earlier pushes are in flight on the client's connection, so sealing and delivery overlap. Sealed lines are
/// placed (given their result slots and sent) in input order. A line is read only while fewer than ``depth``
/// results are outstanding (being sealed, in flight, or done and waiting for an earlier one), so at most
/// `depth - 1 +` one line's items (≤ 16 devices) are held; a result is written as soon as every earlier result is.
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

    /// Runs the pipeline, preparing each line on the calling task.
    ///
    /// - Parameters:
    ///   - lines: the input, read lazily; blank lines are skipped and not numbered.
    ///   - client: the push service's client that delivers `.deliver` items (``APNsClient``); `nil` prints them as
    ///     request lines.
    ///   - prepare: turns line number `n` (1-based) and its text into its items, in output order (an empty array
    ///     is one `internal-error` result: every line gets an outcome); runs on the calling task.
    ///   - output: writes one result line; a thrown ``SenderError`` is an output failure.
    /// - Returns: counts and the first failure.
    public func run(
        lines: some Sequence<String>,
        client: (any PushClient)?,
        prepare: (Int, String) -> [PipelineItem],
        output: (String) throws(SenderError) -> Void
    ) async -> PipelineSummary {
        await self.run(
            lines: lines,
            client: client,
            sealers: 0,
            stage: prepare,
            seal: { $0 },
            output: output
        )
    }

    /// Runs the pipeline with sealing on several cores: `stage` runs on the calling task in input order (parsing,
    /// checking the recipient), `seal` runs for up to `sealers` lines at once on the concurrency pool, and the
    /// sealed lines are delivered and written in input order as before.
    ///
    /// - Parameters:
    ///   - lines: the input, read lazily; blank lines are skipped and not numbered.
    ///   - client: the push service's client that delivers `.deliver` items (``APNsClient``); `nil` prints them as
    ///     request lines.
    ///   - sealers: how many lines are sealed at once (the number of cores is a good choice); `0` seals on the
    ///     calling task, one line at a time.
    ///   - stage: the in-order part of preparing line number `n` (1-based).
    ///   - seal: turns a staged line into its items, in output order (an empty array is one `internal-error`
    ///     result).
    ///   - output: writes one result line; a thrown ``SenderError`` is an output failure.
    /// - Returns: counts and the first failure.
    public func run<Staged: Sendable>(
        lines: some Sequence<String>,
        client: (any PushClient)?,
        sealers: Int,
        stage: (Int, String) -> Staged,
        seal: @escaping @Sendable (Staged) -> [PipelineItem],
        output: (String) throws(SenderError) -> Void
    ) async -> PipelineSummary {
        var summary = PipelineSummary()
        // Keyed by result number (1-based, in output order); each result remembers its input line.
        var ready: [Int: String] = [:]
        var nextToWrite = 1
        var results = 0
        var firstFailureSlot = Int.max

        func record(_ slot: Int, _ line: SendResultLine) {
            if let failure = line.failure {
                summary.failures += 1
                if summary.firstFailure == nil || slot < firstFailureSlot {
                    summary.firstFailure = failure
                    summary.firstFailureLine = line.line
                    firstFailureSlot = slot
                }
            }
            ready[slot] = line.jsonLine()
        }
        func flush() {
            while let text = ready.removeValue(forKey: nextToWrite) {
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
        /// Results not yet written: in flight, or done and waiting for an earlier one.
        func outstanding() -> Int { results - (nextToWrite - 1) }

        await withTaskGroup(of: PipelineEvent.self) { group in
            /// Gives line `number`'s items their result slots, in output order, and starts their deliveries.
            func place(_ number: Int, _ prepared: [PipelineItem]) async {
                var items = prepared
                if items.isEmpty {
                    items = [.failed(SenderError(.internalError, "line \(number) gave no result (please report it)"))]
                }
                for item in items {
                    results += 1
                    let slot = results
                    switch item {
                    case .failed(let error, let device):
                        record(slot, SendResultLine(line: number, error: error, device: device))
                    case .print(let line):
                        ready[slot] = line
                    case .skipped(let reason, let messageID, let device):
                        record(
                            slot,
                            SendResultLine(line: number, skipped: reason, messageID: messageID, device: device)
                        )
                    case .deliver(let request, let messageID, let device):
                        if let client, client.maximumInFlight == 1 {
                            // One push in flight: send in the loop itself, so pushes leave strictly in input order
                            // (concurrent tasks would queue for the one slot in whatever order they start).
                            record(
                                slot,
                                await client.send(request, line: number, messageID: messageID, device: device)
                            )
                        } else if let client {
                            group.addTask {
                                .delivered(
                                    slot: slot,
                                    await client.send(request, line: number, messageID: messageID, device: device)
                                )
                            }
                        } else {
                            ready[slot] = request.jsonLine(device: device)
                        }
                    }
                }
                flush()
            }

            var input = lines.makeIterator()
            var inputDone = false
            var number = 0
            // Lines being sealed, and sealed lines waiting for an earlier one to be placed.
            var sealing = 0
            var sealed: [Int: [PipelineItem]] = [:]
            var nextToPlace = 1
            while true {
                // Read while the lines read and not yet written stay under the depth: memory is bounded even
                // when one early push is slow.
                while !inputDone, sealing < max(sealers, 1), outstanding() + sealing + sealed.count < self.depth {
                    guard let text = input.next() else {
                        inputDone = true
                        break
                    }
                    if text.allSatisfy(\.isWhitespace) { continue }
                    number += 1
                    summary.lines = number
                    let staged = stage(number, text)
                    if sealers == 0 {
                        await place(number, seal(staged))
                        nextToPlace = number + 1
                        // Printing for nobody: the first output error ends the run.
                        if client == nil, summary.outputError != nil { inputDone = true }
                    } else {
                        sealing += 1
                        group.addTask { [number] in .sealed(line: number, seal(staged)) }
                    }
                }
                guard let event = await group.next() else {
                    if inputDone { break }
                    continue
                }
                switch event {
                case .sealed(let line, let items):
                    sealing -= 1
                    sealed[line] = items
                    while let items = sealed.removeValue(forKey: nextToPlace) {
                        await place(nextToPlace, items)
                        nextToPlace += 1
                    }
                    if client == nil, summary.outputError != nil { inputDone = true }
                case .delivered(let slot, let line):
                    record(slot, line)
                    flush()
                }
            }
        }
        summary.results = results
        return summary
    }
}

/// What a pipeline task reports: a line sealed, or a push answered.
private enum PipelineEvent: Sendable {
    case sealed(line: Int, [PipelineItem])
    case delivered(slot: Int, SendResultLine)
}

/// Standard input as a lazy sequence of lines (newline stripped), for ``SendPipeline``.
public struct StandardInputLines: Sequence, IteratorProtocol, Sendable {
    public init() {}
    public mutating func next() -> String? { readLine(strippingNewline: true) }
}
