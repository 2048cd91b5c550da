import Foundation
import Testing

/// Checks shared by the process tests on a decisions file.
enum DecisionFileChecks {
    /// Records an issue for every line that is not a decision with a `seq`, and for any `seq` seen twice.
    ///
    /// - Returns: the seqs in file order.
    @discardableResult
    static func wholeLinesEachSeqOnce(
        _ path: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [Int64] {
        let (lines, torn) = JSONLines.read(path)
        #expect(!torn, "the decisions file ends with a partial line", sourceLocation: sourceLocation)
        var seen = Set<Int64>()
        var seqs: [Int64] = []
        for (index, line) in lines.enumerated() {
            guard let object = JSONLines.object(line), let seq = (object["seq"] as? NSNumber)?.int64Value,
                object["decision"] is String, object["reason"] is String
            else {
                Issue.record(
                    "line \(index + 1) is not a whole decision: \(line.prefix(200))",
                    sourceLocation: sourceLocation
                )
                continue
            }
            #expect(seen.insert(seq).inserted, "seq \(seq) decided twice", sourceLocation: sourceLocation)
            seqs.append(seq)
        }
        return seqs
    }

    /// The (decision, reason) of every line, by seq.
    static func outcomes(_ lines: [String]) -> [Int64: (decision: String, reason: String)] {
        var out: [Int64: (decision: String, reason: String)] = [:]
        for line in lines {
            guard let object = JSONLines.object(line), let seq = (object["seq"] as? NSNumber)?.int64Value else {
                continue
            }
            out[seq] = (object["decision"] as? String ?? "?", object["reason"] as? String ?? "?")
        }
        return out
    }

    /// Records an issue for every spool entry whose decision or reason differs from the expected one.
    static func matchExpected(
        _ lines: [String],
        _ spool: MixedSpool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let outcomes = self.outcomes(lines)
        for entry in spool.entries {
            guard let got = outcomes[entry.seq] else {
                Issue.record("no decision for seq \(entry.seq)", sourceLocation: sourceLocation)
                continue
            }
            #expect(
                got.decision == entry.decision && got.reason == entry.reason,
                "seq \(entry.seq): expected \(entry.decision)/\(entry.reason), got \(got.decision)/\(got.reason)",
                sourceLocation: sourceLocation
            )
        }
    }
}
