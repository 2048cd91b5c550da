import E2EECore
import Foundation
import TestSupport
import Testing

/// A recipient's list is refused with one code per fault, wherever it came from (issue 22): another user's list in
/// `bob.card.json` is `user-id-mismatch` (exit 76, never pinned or sealed to), and a list that is not well formed is
/// `malformed-list` (exit 65) from a contacts card, a card path, `relay publish` and `contact show` alike. (The
/// relay's copy of both: `RelaySendCLITests`.)
@Suite("e2ee-send: a refused list gets one code, wherever it came from")
struct ListRefusalCLITests {
    typealias CLI = SendCLITests

    static func resultLines(_ stdout: String) async throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test("mallory's valid, self-signed list in bob.card.json: refused as user-id-mismatch, mallory never pinned")
    func anotherUsersListInTheCard() async throws {
        let dir = try await CLI.keys()
        let alice = ["--identity", "\(dir)/alice.identity", "--contacts", dir]
        let first = try await CLI.run(["text", "--to", "bob", "--body", "hi"] + alice)
        #expect(first.status == 0, "\(first.stderr)")
        await #expect(try CLI.run(["keygen", "--user-id", "mallory", "--out-dir", dir + "/m"]).status == 0)
        try FileManager.default.removeItem(atPath: dir + "/bob.card.json")
        try FileManager.default.copyItem(atPath: dir + "/m/mallory.card.json", toPath: dir + "/bob.card.json")

        let single = try await CLI.run(["text", "--to", "bob", "--body", "for bob's eyes"] + alice)
        #expect(single.status == 76, "\(single.stderr)")
        #expect(single.stdout.isEmpty)
        #expect(single.stderr.contains("holds mallory's device list, not bob's"), "\(single.stderr)")
        let batch = try await CLI.run(["batch"] + alice, stdin: #"{"kind":"text","to":"bob","body":"x"}"# + "\n")
        #expect(batch.status == 76)
        await #expect(try Self.resultLines(batch.stdout).map { $0["error"] as? String } == ["user-id-mismatch"])
        // Not pinned on first use either (a fresh pins file): the file name says whose card it must be.
        let fresh = try await CLI.run(
            ["text", "--to", "bob", "--body", "x", "--pins", dir + "/fresh-pins.json"] + alice
        )
        #expect(fresh.status == 76, "\(fresh.stderr)")
        let pins = try String(contentsOfFile: dir + "/pins.json", encoding: .utf8)
        #expect(!pins.contains("mallory"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/fresh-pins.json"))
    }

    @Test("a list that is not well formed is malformed-list, exit 65, from every source a sender reads")
    func malformedListOneCode() async throws {
        let dir = try await CLI.keys()
        // Well-formed JSON, not a well-formed list (no devices, no keys): docs/PROTOCOL.md §11.1, key-file.
        try #"{"format":"e2ee-device-list","version":2,"user_id":"bob"}"#.write(
            toFile: dir + "/bob.card.json",
            atomically: true,
            encoding: .utf8
        )
        let alice = ["--identity", "\(dir)/alice.identity", "--contacts", dir]
        let viaContacts = try await CLI.run(["text", "--to", "bob", "--body", "x"] + alice)
        let viaPath = try await CLI.run(["text", "--to", dir + "/bob.card.json", "--body", "x"] + alice)
        let publish = try await CLI.run([
            "relay", "publish", "--card", dir + "/bob.card.json", "--relay", "https://127.0.0.1:9",
        ])
        let show = try await CLI.run([
            "contact", "show", "--card", dir + "/bob.card.json", "--identity", dir + "/alice.identity",
        ])
        for (name, result) in [("contacts", viaContacts), ("path", viaPath), ("publish", publish), ("show", show)] {
            #expect(result.status == 65, "\(name): \(result.stderr)")
            #expect(result.stderr.contains("not a well-formed device list"), "\(name): \(result.stderr)")
        }
        let batch = try await CLI.run(["batch"] + alice, stdin: #"{"kind":"text","to":"bob","body":"x"}"# + "\n")
        #expect(batch.status == 65)
        await #expect(try Self.resultLines(batch.stdout).map { $0["error"] as? String } == ["malformed-list"])
    }

    @Test("a public card passed as --identity is told it is a card, not to chmod 600 it")
    func cardAsIdentity() async throws {
        let dir = try await CLI.keys()
        let result = try await CLI.run([
            "text", "--identity", dir + "/bob.card.json", "--contacts", dir, "--to", "bob", "--body", "x",
        ])
        #expect(result.status == 66, "\(result.stderr)")
        #expect(result.stderr.contains("is a public card"), "\(result.stderr)")
        #expect(!result.stderr.contains("chmod"), "\(result.stderr)")
    }
}
