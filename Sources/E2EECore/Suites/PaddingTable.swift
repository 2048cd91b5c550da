/// The padding buckets of one transport, per crypto suite (docs/PROTOCOL.md §6).
///
/// A bucket is a padded inner-plaintext size. Which sizes exist depends on the suite (its header takes room in the
/// push) and on the transport (its body limit): a push transport publishes its table, and sealing and envelope
/// parsing take it, so the core holds no transport's numbers.
public struct PaddingTable: Sendable, Hashable {
    /// One entry per suite. A list, not a dictionary: a table holds one or two suites, and
    /// `once` (a process per push) would otherwise spend more on the dictionary's generic metadata at start than on
    /// every lookup of its life.
    private let entries: [Entry]

    private struct Entry: Sendable, Hashable {
        var suiteID: UInt16
        var buckets: [Int]
    }

    /// A table from each suite's buckets (a suite given twice keeps its last buckets), smallest first.
    public init(_ buckets: KeyValuePairs<CryptoSuite, [Int]>) {
        var entries: [Entry] = []
        for (suite, sizes) in buckets {
            entries.removeAll { $0.suiteID == suite.id }
            entries.append(Entry(suiteID: suite.id, buckets: sizes.sorted()))
        }
        // By suite id, so that two tables of the same buckets are equal whatever the order they were given in.
        self.entries = entries.sorted { $0.suiteID < $1.suiteID }
    }

    /// The buckets of `suite`, smallest first; empty when the transport cannot carry the suite.
    public func buckets(for suite: CryptoSuite) -> [Int] {
        self.entries.first { $0.suiteID == suite.id }?.buckets ?? []
    }
}
