import ArgumentParser
import E2EECore

/// A crypto suite named on the command line (`--suite classical`, docs/PROTOCOL.md §16.4).
///
/// The names are those of ``CryptoSuite/all``, so a suite added there is accepted here with no change.
struct SuiteName: ExpressibleByArgument, Sendable {
    let suite: CryptoSuite

    init(_ suite: CryptoSuite) { self.suite = suite }

    init?(argument: String) {
        guard let suite = CryptoSuite.named(argument) else { return nil }
        self.suite = suite
    }

    var defaultValueDescription: String { self.suite.name }

    static var allValueStrings: [String] { CryptoSuite.all.map(\.name) }
}
