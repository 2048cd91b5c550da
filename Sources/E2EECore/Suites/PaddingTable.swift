/// The padding buckets of one transport, per crypto suite (docs/PROTOCOL.md §6).
///
/// A bucket is a padded inner-plaintext size. Which sizes exist depends on the suite (its header takes room in the
/// push) and on the transport (its body limit): a push transport publishes its table, and sealing and envelope
/// parsing take it, so the core holds no transport's numbers.
public struct PaddingTable: Sendable, Hashable {
    private let buckets: [UInt16: [Int]]

    /// A table from each suite's buckets, smallest first.
    public init(_ buckets: [CryptoSuite: [Int]]) {
        self.buckets = Dictionary(uniqueKeysWithValues: buckets.map { ($0.key.id, $0.value.sorted()) })
    }

    /// The buckets of `suite`, smallest first; empty when the transport cannot carry the suite.
    public func buckets(for suite: CryptoSuite) -> [Int] {
        self.buckets[suite.id] ?? []
    }
}
