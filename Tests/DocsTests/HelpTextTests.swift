import Foundation
import TestSupport
import Testing

/// The `--help` of every command of the four executables, found by walking each one's SUBCOMMANDS: every one lists
/// its exit codes (issue 22: `e2ee-filter`, `run`, `once` and `relay serve` did not), and the options read as what
/// they are (`cancel --reason` showed `(default: 1)` and empty value descriptions; the `relay` subcommands showed the
/// sender's optional `--relay`).
@Suite("Docs: every command's --help lists its exit codes", .serialized)
struct HelpTextTests {
    /// The subcommand names a `--help` text lists (`list, ls` is `list`).
    static func subcommands(of help: String) -> [String] {
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        var names: [String] = []
        for line in help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            guard line.hasPrefix("  ") else { break }
            let trimmed = line.drop(while: { $0 == " " })
            guard line.prefix(while: { $0 == " " }).count == 2, let first = trimmed.split(separator: " ").first else {
                continue
            }
            let name = String(first.split(separator: ",")[0])
            if name != "help" { names.append(name) }
        }
        return names
    }

    /// Every command path of `executable` with its help text, the root first.
    static func helps(_ executable: String) async throws -> [(path: [String], text: String)] {
        var out: [(path: [String], text: String)] = []
        var queue: [[String]] = [[]]
        while !queue.isEmpty {
            let path = queue.removeFirst()
            let output = try await ChildProcess.run(executable, path + ["--help"])
            #expect(output.status == 0, "\(executable) \(path) --help: \(output.stderr)")
            out.append((path, output.stdoutText))
            queue += Self.subcommands(of: output.stdoutText).map { path + [$0] }
        }
        return out
    }

    @Test(
        "every command of every executable lists its exit codes in --help",
        arguments: ["e2ee-send", "e2ee-filter", "e2ee-gateway", "e2ee-relay"]
    )
    func exitCodesEverywhere(executable: String) async throws {
        let helps = try await Self.helps(executable)
        #expect(helps.count > 1, "\(executable) has subcommands")
        for (path, text) in helps {
            #expect(text.contains("Exit codes:"), "\(([executable] + path).joined(separator: " ")) --help")
            #expect(!text.contains(" - \n"), "an empty value description in \(path)")
        }
    }

    @Test("cancel --reason names its default and says what each reason means; relay subcommands need --relay")
    func optionTexts() async throws {
        let cancel = try await ChildProcess.run("e2ee-send", ["cancel", "--help"]).stdoutText
        #expect(cancel.contains("(default: remoteEnded)"), "\(cancel)")
        #expect(!cancel.contains("(default: 1)"))
        #expect(cancel.contains("answeredElsewhere - another device of the callee's own user answered"))
        for command in ["publish", "register", "tokens"] {
            let help = try await ChildProcess.run("e2ee-send", ["relay", command, "--help"]).stdoutText
            #expect(help.contains(" --relay <relay> "), "\(command): --relay is required")
            #expect(!help.contains("[--relay <relay>]"), "\(command)")
            #expect(!help.contains("Send through this relay"), "\(command): the sender's text")
        }
    }
}
