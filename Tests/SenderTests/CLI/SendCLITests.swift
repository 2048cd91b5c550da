import E2EECore
import Foundation
import TestSupport
import Testing

/// `e2ee-send` as a process: every user error gets its documented exit code and a message on stderr that says what
/// was wrong; stdout stays machine output.
@Suite("e2ee-send command line: malformed input and exit codes")
struct SendCLITests {
    static func binary() throws -> String {
        try TestExecutable.path("e2ee-send")
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `e2ee-send` to completion with `stdin`, without the identity and APNs key variables of the caller's
    /// environment (then `environment` on top).
    static func run(
        _ arguments: [String],
        stdin: String = "",
        environment: [String: String] = [:]
    ) async throws -> Result {
        var changes: [String: String?] = ["E2EE_IDENTITY_FILE": nil, "APNS_KEY_PATH": nil]
        for (name, value) in environment { changes[name] = value }
        let output = try await ChildProcess.run(
            "e2ee-send",
            arguments,
            stdin: .bytes(Array(stdin.utf8)),
            environment: changes
        )
        return Result(status: output.status, stdout: output.stdoutText, stderr: output.stderr)
    }

    /// alice and bob (with a device token) in a fresh folder.
    static func keys() async throws -> String {
        let dir = NSTemporaryDirectory() + "e2ee-send-cli-\(UUID().uuidString)"
        #expect(try await run(["keygen", "--user-id", "alice", "--out-dir", dir]).status == 0)
        #expect(
            try await run([
                "keygen", "--user-id", "bob", "--out-dir", dir, "--device-token", String(repeating: "ab", count: 32),
            ]).status == 0
        )
        return dir
    }

    @Test("a text prints one APNs request line; the identity is 0600 and the card public")
    func happyPath() async throws {
        let dir = try await Self.keys()
        let r = try await Self.run([
            "text", "--identity", "\(dir)/alice.identity", "--contacts", dir, "--to", "bob", "--body", "hi",
        ])
        #expect(r.status == 0)
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(json["device_token"] as? String == String(repeating: "ab", count: 32))
        #expect((json["body"] as? String)?.utf8.count == 2233)
        let mode = try FileManager.default.attributesOfItem(atPath: "\(dir)/alice.identity")[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("user errors: documented exit codes and a message that says what to do")
    func userErrors() async throws {
        let dir = try await Self.keys()
        let id = ["--identity", "\(dir)/alice.identity"]
        let cases: [(String, [String], Int32, String)] = [
            ("unknown subcommand", ["shout"], 64, "Error"),
            ("missing required --to", ["text"] + id + ["--body", "x"], 64, "--to"),
            ("no identity at all", ["text", "--contacts", dir, "--to", "bob", "--body", "x"], 66, "--identity"),
            (
                "identity file missing",
                ["text", "--identity", "\(dir)/nobody.identity", "--contacts", dir, "--to", "bob", "--body", "x"], 66,
                "check the path"
            ),
            (
                "unknown recipient", ["text"] + id + ["--contacts", dir, "--to", "carol", "--body", "x"], 65,
                "no contact card for \"carol\""
            ),
            (
                "text too long",
                ["text"] + id + ["--contacts", dir, "--to", "bob", "--body", String(repeating: "x", count: 3000)], 65,
                "shorten the text"
            ),
            (
                "bad device token",
                ["text"] + id + ["--contacts", dir, "--to", "bob", "--device-token", "xyz", "--body", "x"], 64,
                "hex digits"
            ),
            // Typed flags: the error names the flag (not a JSON field) and lists the choices.
            (
                "bad call id", ["cancel"] + id + ["--contacts", dir, "--to", "bob", "--call-id", "not-a-uuid"], 64,
                "--call-id"
            ),
            (
                "bad cancel reason",
                ["cancel"] + id + [
                    "--contacts", dir, "--to", "bob", "--call-id", UUID().uuidString, "--reason", "bored",
                ], 64,
                "--reason <reason>'. Please provide one of 'remoteEnded', 'answeredElsewhere' or 'declinedElsewhere'"
            ),
            ("receipt without ids", ["receipt"] + id + ["--contacts", dir, "--to", "bob"], 64, "--for"),
            (
                "bad message id", ["receipt"] + id + ["--contacts", dir, "--to", "bob", "--for", "1234"], 64,
                "'--for <for>': a message id is 32 hex digits"
            ),
            (
                "ring timeout out of range", ["call"] + id + ["--contacts", dir, "--to", "bob", "--ring-timeout", "0"],
                64, "--ring-timeout must be 1-3600 seconds"
            ),
            (
                "deliver without key ids",
                ["text"] + id + ["--contacts", dir, "--to", "bob", "--body", "x", "--deliver"], 64, "--apns-key-id"
            ),
        ]
        for (name, args, status, message) in cases {
            let r = try await Self.run(args)
            #expect(r.status == status, "\(name): exit \(r.status), stderr: \(r.stderr)")
            #expect(r.stderr.contains(message), "\(name): stderr was \(r.stderr)")
            #expect(!r.stdout.contains("\"body\""), "\(name): printed a request anyway")
        }
    }

    @Test("an identity readable by others is refused with exit 77 and the chmod to run")
    func insecureIdentity() async throws {
        let dir = try await Self.keys()
        chmod("\(dir)/alice.identity", 0o644)
        let r = try await Self.run([
            "text", "--identity", "\(dir)/alice.identity", "--contacts", dir, "--to", "bob", "--body", "x",
        ])
        #expect(r.status == 77)
        #expect(r.stderr.contains("chmod 600"))
    }

    @Test("batch: a bad line gets an error result and the batch goes on, in order; exit code of the first failure")
    func batchGoesOn() async throws {
        let dir = try await Self.keys()
        let input = """
            {"kind":"text","to":"bob","body":"one"}
            not json at all
            {"kind":"fax","to":"bob"}
            {"kind":"text","to":"nobody","body":"x"}

            {"kind":"receipt","to":"bob","message_ids":["00112233445566778899aabbccddeeff"]}
            """
        let r = try await Self.run(["batch", "--identity", "\(dir)/alice.identity", "--contacts", dir], stdin: input)
        #expect(r.status == 65)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        #expect(lines[0].contains("\"body\""))
        #expect(lines[1].contains("\"error\":\"bad-request\"") && lines[1].contains("\"line\":2"))
        #expect(lines[2].contains("\"error\":\"bad-request\"") && lines[2].contains("unknown kind"))
        #expect(lines[3].contains("\"error\":\"unknown-recipient\""))
        #expect(lines[4].contains("\"body\""))
    }
}
