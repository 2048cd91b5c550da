import E2EECore

extension RelaySender {
    /// `e2ee-send batch --relay`: request lines (README "Batch requests") in, one result line per recipient device
    /// out, in input order. Lines are submitted one at a time (each line's envelopes in one submit); each user's
    /// list is fetched once per run. A bad line or a refused recipient fails that line and the batch goes on.
    ///
    /// - Parameters:
    ///   - lines: the input, read lazily; blank lines are skipped and not numbered.
    ///   - output: writes one result line; a thrown ``SenderError`` is an output failure, after which results are
    ///     counted as unwritten (the pushes asked for are still submitted).
    ///   - notice: a message for people (a skipped device).
    /// - Returns: counts, the first failure and the first output error.
    public mutating func run(
        lines: some Sequence<String>,
        output: (String) throws(SenderError) -> Void,
        notice: (String) -> Void
    ) async -> PipelineSummary {
        var summary = PipelineSummary()
        var number = 0
        for text in lines {
            if text.allSatisfy(\.isWhitespace) { continue }
            number += 1
            summary.lines += 1
            var results: [SendResultLine]
            do throws(SenderError) {
                results = try await self.send(line: text, number: number)
            } catch {
                results = [SendResultLine(line: number, error: error)]
            }
            for result in results {
                summary.results += 1
                if let failure = result.failure {
                    summary.failures += 1
                    if summary.firstFailure == nil {
                        summary.firstFailure = failure
                        summary.firstFailureLine = number
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
                        "line \(number): skipped device \(result.device ?? "-"): its push address at the relay is "
                            + skipped
                    )
                }
            }
        }
        return summary
    }

    /// One request line: parsed, sealed for each deliverable device of its recipient and submitted.
    mutating func send(line text: String, number: Int) async throws(SenderError) -> [SendResultLine] {
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
        return try await self.send(
            try request.content(sender: self.builder.identity),
            to: request.to,
            messageID: messageID ?? .random(),
            sentAtMs: request.sentAtMs,
            line: number
        )
    }
}
