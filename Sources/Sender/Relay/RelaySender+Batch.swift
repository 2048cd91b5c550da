import E2EECore

extension RelaySender {
    /// `e2ee-send batch --relay`: request lines (README "Batch requests") in, one result line per recipient device
    /// out, in input order. Each line's envelopes go in one submit; each user's list is fetched once per run. A bad
    /// line or a refused recipient fails that line and the batch goes on.
    ///
    /// Lines are read, parsed and checked in input order on the calling task (the list fetches and pins are the
    /// sender's state); sealing and submitting run for up to `window` lines at once, so the relay's round trips
    /// overlap. With a window above 1, submits (like concurrent APNs pushes) may reach the relay in any order; 1
    /// submits strictly in input order.
    ///
    /// - Parameters:
    ///   - lines: the input, read lazily; blank lines are skipped and not numbered.
    ///   - window: most submits in flight (at least 1).
    ///   - retryAfterBudget: per line, how long refusals that name a `Retry-After` (rate limited, storage busy,
    ///     draining) are waited out before the line fails; zero fails it at the first one.
    ///   - output: writes one result line; a thrown ``SenderError`` is an output failure, after which results are
    ///     counted as unwritten (the pushes asked for are still submitted).
    ///   - notice: a message for people (a skipped device).
    /// - Returns: counts, the first failure and the first output error.
    public mutating func run(
        lines: some Sequence<String>,
        window: Int = 1,
        retryAfterBudget: Duration = .zero,
        output: (String) throws(SenderError) -> Void,
        notice: (String) -> Void
    ) async -> PipelineSummary {
        var summary = PipelineSummary()
        var number = 0
        var written = 0
        // Finished lines waiting for an earlier one: at most `window` of them.
        var ready: [Int: [SendResultLine]] = [:]
        let client = self.client
        let window = max(window, 1)

        func write(_ results: [SendResultLine], line: Int) {
            for result in results {
                summary.results += 1
                if let failure = result.failure {
                    summary.failures += 1
                    if summary.firstFailure == nil {
                        summary.firstFailure = failure
                        summary.firstFailureLine = line
                    }
                }
                if summary.outputError == nil {
                    do throws(SenderError) {
                        try output(result.jsonLine())
                    } catch {
                        summary.outputError = error
                    }
                }
                if summary.outputError != nil { summary.unwritten += 1 }
                if let skipped = result.skipped {
                    notice(
                        "line \(line): skipped device \(result.device ?? "-"): its push address at the relay is "
                            + skipped
                    )
                }
            }
        }
        func flush() {
            while let results = ready.removeValue(forKey: written + 1) {
                written += 1
                write(results, line: written)
            }
        }

        await withTaskGroup(of: (Int, [SendResultLine]).self) { group in
            var inFlight = 0
            for text in lines {
                if text.allSatisfy(\.isWhitespace) { continue }
                number += 1
                summary.lines += 1
                let line = number
                do throws(SenderError) {
                    switch try await self.prepare(line: text, number: line) {
                    case .done(let results):
                        ready[line] = results
                    case .submit(let submission):
                        inFlight += 1
                        group.addTask {
                            (line, await submission.complete(client: client, retryAfterBudget: retryAfterBudget))
                        }
                    }
                } catch {
                    ready[line] = [SendResultLine(line: line, error: error)]
                }
                while inFlight >= window, let (done, results) = await group.next() {
                    inFlight -= 1
                    ready[done] = results
                }
                flush()
            }
            while let (done, results) = await group.next() {
                ready[done] = results
                flush()
            }
        }
        return summary
    }

    /// One request line: parsed and checked, its recipient's list fetched (once per run), ready to seal and submit.
    mutating func prepare(line text: String, number: Int) async throws(SenderError) -> Prepared {
        let request = try SendRequest.parse(line: text)
        guard request.deviceToken == nil, request.topic == nil else {
            throw SenderError(
                .usage,
                "\"device_token\" and \"topic\" do not go with --relay: the relay delivers to the address and topic "
                    + "each device registered"
            )
        }
        var messageID: MessageID? = nil
        if let hex = request.messageID { messageID = try SendRequest.messageID(hex) }
        return try await self.prepare(
            try request.content(sender: self.builder.identity),
            to: request.to,
            messageID: messageID ?? .random(),
            sentAtMs: request.sentAtMs,
            line: number
        )
    }
}
