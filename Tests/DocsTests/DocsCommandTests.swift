import Foundation
import TestSupport
import Testing

/// Every command block of README.md and docs/*.md runs as written (issue 22: the README ran `relay serve` before the
/// APNs key and gateway existed, named files no command made, and shared one TLS folder between two servers). The
/// rules are ``DocumentScript``'s.
@Suite("Docs: every command block of README.md and docs/*.md runs as written", .serialized)
struct DocsCommandTests {
    /// The package folder (this file is Tests/DocsTests/DocsCommandTests.swift).
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// README.md and every docs/*.md, by path relative to the package.
    static let documents: [String] = {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: package + "/docs")) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }()

    @Test("the command blocks run in order in a fresh folder, each document in its own", arguments: Self.documents)
    func commandBlocksRun(_ document: String) async throws {
        let markdown = try String(contentsOfFile: Self.package + "/" + document, encoding: .utf8)
        let script = try DocumentScript(name: document, markdown: markdown)
        for block in script.skipped {
            print("docs-test: skipped \(document):\(block.line) (\(block.skipReason ?? ""))")
        }
        guard !script.runnable.isEmpty else { return }
        let folder = NSTemporaryDirectory() + "docs-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder + "/.docs-test", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/.docs-test/script.sh"
        try script.script(ports: [try freeLoopbackPort(), try freeLoopbackPort()]).write(
            toFile: path,
            atomically: true,
            encoding: .utf8
        )
        // bash runs the script with the path of e2ee-send (found as every process test finds it) as $1: its folder
        // holds the four binaries. The working folder is the fresh one.
        let output = try await ChildProcess.run(
            "e2ee-send",
            [],
            stdout: .file(folder + "/.docs-test/stdout"),
            stderr: .file(folder + "/.docs-test/stderr"),
            environment: ["E2EE_IDENTITY_FILE": nil, "E2EE_PINS_FILE": nil, "E2EE_TOPIC": nil, "APNS_KEY_PATH": nil],
            prefix: ["/usr/bin/env", "-C", folder, "bash", path],
            timeout: .seconds(240)
        )
        #expect(
            output.status == 0,
            "\(document): exit \(output.status)\n--- stderr (last 4,000 bytes) ---\n\(String(output.stderr.suffix(4_000)))"
        )
    }

    @Test("a skip marker must give its reason; a block must be closed")
    func markerRules() throws {
        #expect(throws: DocsTestError.self) {
            try DocumentScript(name: "t.md", markdown: "<!-- docs-test: skip () -->\n```sh\nls\n```\n")
        }
        #expect(throws: DocsTestError.self) { try DocumentScript(name: "t.md", markdown: "```sh\nls\n") }
        let script = try DocumentScript(
            name: "t.md",
            markdown: "```sh\necho 8443\n```\n<!-- docs-test: skip (needs a phone) -->\n```sh\nreboot\n```\n"
        )
        #expect(script.runnable.map(\.line) == [1])
        #expect(script.skipped.map(\.skipReason) == ["needs a phone"])
        #expect(script.script(ports: [1234, 5678]).contains("echo 1234"))
        #expect(!script.script(ports: [1234, 5678]).contains("reboot"))
    }
}
