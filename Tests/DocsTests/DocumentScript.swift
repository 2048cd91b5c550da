import Foundation

/// The command blocks of one Markdown document, turned into the one bash script the docs test runs.
///
/// The rules, stated once (README "Spec, vectors, tests" repeats them for writers of the docs):
///
/// - Every ```` ```sh ```` block runs, in document order, in one bash session (`set -euo pipefail`), so a later
///   block uses what an earlier one made, exactly as a reader who pastes them one after the other.
/// - A block preceded by `<!-- docs-test: skip (reason) -->` on the line before its fence is not run; the reason is
///   required and every skip is printed with it.
/// - The only substitutions: the session starts in a fresh temporary folder (every path in the docs is relative,
///   `/tmp` is never named) with the debug binaries first on `PATH`, and the example ports `8443` (the local APNs
///   gateway) and `8444` (the relay) become free ports chosen for the run, wherever they appear.
/// - A server or daemon runs as the reader runs it, with a trailing `&`, and the block waits for it as the docs
///   show (`until [ -s FILE ]; do sleep 0.1; done` on its `--port-file`). Whatever still runs when the document
///   ends is stopped with SIGTERM.
struct DocumentScript: Sendable {
    /// One fenced `sh` block.
    struct Block: Sendable, Hashable {
        /// The line of the opening fence (1-based), for messages.
        var line: Int
        var text: String
        /// Why it is not run, when it is marked.
        var skipReason: String?
    }

    static let skipMarker = "<!-- docs-test: skip ("
    static let examplePorts = ["8443", "8444"]

    let name: String
    let blocks: [Block]

    /// The `sh` blocks of `markdown`.
    ///
    /// - Throws: a message naming the line when a skip marker has no reason, or a block is not closed.
    init(name: String, markdown: String) throws {
        self.name = name
        var blocks: [Block] = []
        let lines = markdown.components(separatedBy: "\n")
        var index = 0
        while index < lines.count {
            guard lines[index] == "```sh" else {
                index += 1
                continue
            }
            let opening = index
            var skip: String? = nil
            if opening > 0, lines[opening - 1].hasPrefix(Self.skipMarker) {
                let marker = lines[opening - 1]
                guard marker.hasSuffix(") -->") else {
                    throw DocsTestError("\(name):\(opening): a skip marker is `<!-- docs-test: skip (reason) -->`")
                }
                let reason = marker.dropFirst(Self.skipMarker.count).dropLast(") -->".count)
                guard !reason.allSatisfy(\.isWhitespace) else {
                    throw DocsTestError("\(name):\(opening): a skipped block must say why")
                }
                skip = String(reason)
            }
            var body: [String] = []
            index += 1
            while index < lines.count, lines[index] != "```" {
                body.append(lines[index])
                index += 1
            }
            guard index < lines.count else { throw DocsTestError("\(name):\(opening + 1): the block is not closed") }
            blocks.append(Block(line: opening + 1, text: body.joined(separator: "\n"), skipReason: skip))
            index += 1
        }
        self.blocks = blocks
    }

    var runnable: [Block] { self.blocks.filter { $0.skipReason == nil } }
    var skipped: [Block] { self.blocks.filter { $0.skipReason != nil } }

    /// The bash script of the runnable blocks, with the example ports replaced by `ports` (same order as
    /// ``examplePorts``).
    func script(ports: [Int]) -> String {
        var out = """
            set -euo pipefail
            export PATH="$(dirname "$1"):$PATH"
            docs_block=start
            stop_all() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; }
            trap 'echo "docs-test: a command failed in the block at $docs_block (exit $?)" >&2' ERR
            trap stop_all EXIT
            trap 'echo "docs-test: stopped in the block at $docs_block" >&2; exit 143' TERM

            """
        for block in self.runnable {
            var text = block.text
            for (example, port) in zip(Self.examplePorts, ports) {
                text = text.replacingOccurrences(of: example, with: String(port))
            }
            out += "docs_block=\"\(self.name):\(block.line)\"\n" + text + "\n"
        }
        return out
    }
}

struct DocsTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
