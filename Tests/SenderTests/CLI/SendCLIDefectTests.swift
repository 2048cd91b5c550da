import E2EECore
import Foundation
import TestSupport
import Testing

/// `e2ee-send` as a user meets it on the first day: a closed stdout, the card's topic, a rotated card, batch keys
/// it does not know, device tokens and sizes that are wrong, and failures that had no documented exit code.
@Suite("e2ee-send command line: first-day defects")
struct SendCLIDefectTests {
    typealias CLI = SendCLITests

    /// alice, and bob with a device token and the topic com.example.app in his card.
    static func keys(environment: [String: String] = [:]) async throws -> String {
        let dir = NSTemporaryDirectory() + "e2ee-send-defects-\(UUID().uuidString)"
        await #expect(try CLI.run(["keygen", "--user-id", "alice", "--out-dir", dir]).status == 0)
        let bob = try await CLI.run(
            [
                "keygen", "--user-id", "bob", "--out-dir", dir, "--device-token", String(repeating: "ab", count: 32),
                "--topic", "com.example.app",
            ],
            environment: environment
        )
        #expect(bob.status == 0, "\(bob.stderr)")
        return dir
    }

    static func topic(ofRequestLine line: String) async throws -> String? {
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        return (json["headers"] as? [String: String])?["apns-topic"]
    }

    @Test("a reader that closes stdout: exit 74 with a message, not a signal; the rest is counted unwritten")
    func closedStdout() async throws {
        let dir = try await Self.keys()
        let input = dir + "/requests.jsonl"
        let lines = (1...100).map { #"{"kind":"text","to":"bob","body":"n\#($0)"}"# }
        try lines.joined(separator: "\n").write(toFile: input, atomically: true, encoding: .utf8)
        let script = """
            "$0" batch --identity "$1/alice.identity" --contacts "$1" < "$2" 2> "$1/stderr" | true
            echo "${PIPESTATUS[0]}" > "$1/status"
            """
        // bash runs the script with e2ee-send's path as $0 (ChildProcess puts the executable after the prefix).
        let shell = try await ChildProcess.run("e2ee-send", [dir, input], prefix: ["/bin/bash", "-c", script])
        #expect(shell.status == 0, "\(shell.stderr)")
        let status = try String(contentsOfFile: dir + "/status", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let stderr = try String(contentsOfFile: dir + "/stderr", encoding: .utf8)
        #expect(status == "74", "stderr: \(stderr)")
        #expect(stderr.contains("cannot write to standard output (the reader closed the pipe)"))
        #expect(stderr.contains("result lines were not written"))
        #expect(!stderr.contains("Fatal error"))
    }

    @Test("the topic is the card's push.topic unless --topic or $E2EE_TOPIC overrides it")
    func topicFromCard() async throws {
        let dir = try await Self.keys()
        let base = ["text", "--identity", "\(dir)/alice.identity", "--contacts", dir, "--to", "bob", "--body", "x"]
        let fromCard = try await CLI.run(base)
        #expect(fromCard.status == 0, "\(fromCard.stderr)")
        await #expect(try Self.topic(ofRequestLine: fromCard.stdout) == "com.example.app")
        let flag = try await CLI.run(base + ["--topic", "com.example.flag"])
        await #expect(try Self.topic(ofRequestLine: flag.stdout) == "com.example.flag")
        let env = try await CLI.run(base, environment: ["E2EE_TOPIC": "com.example.env"])
        await #expect(try Self.topic(ofRequestLine: env.stdout) == "com.example.env")
        let both = try await CLI.run(
            base + ["--topic", "com.example.flag"],
            environment: ["E2EE_TOPIC": "com.example.env"]
        )
        await #expect(try Self.topic(ofRequestLine: both.stdout) == "com.example.flag")
        // batch: the card's topic, and a line's own "topic" key
        let batch = try await CLI.run(
            ["batch", "--identity", "\(dir)/alice.identity", "--contacts", dir],
            stdin: """
                {"kind":"text","to":"bob","body":"a"}
                {"kind":"text","to":"bob","body":"b","topic":"com.example.line"}
                """
        )
        let lines = batch.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        await #expect(try Self.topic(ofRequestLine: lines[0]) == "com.example.app")
        await #expect(try Self.topic(ofRequestLine: lines[1]) == "com.example.line")
        // keygen and card honour $E2EE_TOPIC too
        let envKeys = NSTemporaryDirectory() + "e2ee-send-topic-\(UUID().uuidString)"
        let keygen = try await CLI.run(
            [
                "keygen", "--user-id", "carol", "--out-dir", envKeys, "--device-token",
                String(repeating: "cd", count: 32),
            ],
            environment: ["E2EE_TOPIC": "com.example.env"]
        )
        #expect(keygen.status == 0)
        let card = try DeviceList.load(path: envKeys + "/carol.card.json")
        #expect(card.devices[0].push?.apns?.topic == "com.example.env")
    }

    @Test("rotate keeps the push address in the printed card and in a card written to a new path")
    func rotateKeepsPush() async throws {
        let dir = try await Self.keys()
        let before = try DeviceList.load(path: dir + "/bob.card.json")
        let r = try await CLI.run(["rotate", "--identity", "\(dir)/bob.identity", "--card-out", "\(dir)/new.card.json"])
        #expect(r.status == 0, "\(r.stderr)")
        let printed = try DeviceList.parse(Array(r.stdout.utf8))
        let written = try DeviceList.load(path: dir + "/new.card.json")
        for card in [printed, written] {
            #expect(card.devices[0].push == before.devices[0].push)
            #expect(card.devices[0].push?.apns?.topic == "com.example.app")
            #expect(card.userID == before.userID && card.displayName == before.displayName)
            #expect(card.devices[0].deviceKeys.count == before.devices[0].deviceKeys.count + 1)
            #expect(card.devices[0].currentKey.keyID != before.devices[0].currentKey.keyID)
            #expect(card.listVersion == before.listVersion + 1)
        }
        // a sender using the rotated card finds the token
        let send = try await CLI.run([
            "text", "--identity", "\(dir)/alice.identity", "--to", "\(dir)/new.card.json", "--body", "after rotation",
        ])
        #expect(send.status == 0, "\(send.stderr)")
    }

    @Test("batch: an unknown key is an error naming it (and the key meant); a call without call_id gets one")
    func batchUnknownKeys() async throws {
        let dir = try await Self.keys()
        let r = try await CLI.run(
            ["batch", "--identity", "\(dir)/alice.identity", "--contacts", dir],
            stdin: """
                {"kind":"call","to":"bob","has_video":true}
                {"kind":"call","to":"bob","ring_timeout_s":60}
                {"kind":"call","to":"bob","colour":"red"}
                {"kind":"call","to":"bob","video":true}
                {"kind":"cancel","to":"bob"}
                """
        )
        #expect(r.status == 65)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        #expect(lines[0].contains(#"unknown key \"has_video\" (did you mean \"video\"?)"#), "\(lines[0])")
        #expect(lines[1].contains(#"unknown key \"ring_timeout_s\" (did you mean \"ring_timeout\"?)"#))
        #expect(lines[2].contains(#"unknown key \"colour\""#) && lines[2].contains("Batch requests"))
        #expect(lines[3].contains(#""body""#) && !lines[3].contains("error"))
        #expect(lines[4].contains(#""error":"bad-request""#) && lines[4].contains("call_id"))
    }

    @Test("device tokens: the message names the rule broken")
    func deviceTokenMessages() async throws {
        let dir = NSTemporaryDirectory() + "e2ee-send-token-\(UUID().uuidString)"
        let cases: [(String, String)] = [
            ("abab", "got only 4 digits"),
            (String(repeating: "a", count: 65), "odd count (65)"),
            (String(repeating: "ab", count: 101), "got 202 digits"),
            ("abcdefgh" + String(repeating: "0", count: 56), "character 7 is not a hex digit"),
        ]
        for (token, message) in cases {
            let r = try await CLI.run(["keygen", "--user-id", "t", "--out-dir", dir, "--device-token", token])
            #expect(r.status == 64)
            #expect(r.stderr.contains(message), "\(token): \(r.stderr)")
            #expect(!r.stderr.contains("even number of hex digits"))
        }
    }

    @Test("too large: the error says what is too large for that kind, with this sender's numbers")
    func sizeErrors() async throws {
        let dir = try await Self.keys()
        let id = ["--identity", "\(dir)/alice.identity", "--contacts", dir, "--to", "bob"]
        let ids = (0..<177).flatMap { ["--for", String(format: "%032x", $0)] }
        let receipt = try await CLI.run(["receipt"] + id + ids)
        #expect(receipt.status == 65)
        #expect(receipt.stderr.contains("a receipt from alice holds at most 176 message ids, this one has 177"))
        #expect(!receipt.stderr.contains("shorten the text"))
        await #expect(try CLI.run(["receipt"] + id + Array(ids.prefix(2 * 176))).status == 0)
        let participants = (0..<40).flatMap { ["--participant", String(repeating: "p", count: 70) + "\($0)"] }
        let invite = try await CLI.run(["call"] + id + participants)
        #expect(invite.status == 65)
        #expect(invite.stderr.contains("the invite has 40 participants"))
        #expect(!invite.stderr.contains("shorten the text"))
        let text = try await CLI.run(["text"] + id + ["--body", String(repeating: "x", count: 3000)])
        #expect(text.status == 65)
        #expect(text.stderr.contains("shorten the text"))
    }

    @Test("failures that exited 1: card without an identity (66), keygen into a folder it cannot create (73)")
    func documentedExitCodes() async throws {
        let card = try await CLI.run(["card"])
        #expect(card.status == 66, "\(card.stderr)")
        #expect(card.stderr.contains("--identity"))
        let keygen = try await CLI.run(["keygen", "--user-id", "a", "--out-dir", "/dev/null/keys"])
        #expect(keygen.status == 73, "\(keygen.stderr)")
        #expect(keygen.stderr.contains("cannot create"))
        let flag = try await CLI.run(["cancel", "--identity", "x", "--to", "bob", "--call-id", "nope"])
        #expect(flag.status == 64)
        #expect(flag.stderr.contains("--call-id"))
    }

    @Test("--relay-timeout outside 1-3600 s is a usage error (exit 64) before anything is read or sent")
    func relayTimeoutRange() async throws {
        for value in ["0", "3601", "-5"] {
            let r = try await CLI.run([
                "relay", "publish", "--card", "/nonexistent/card.json", "--relay", "https://127.0.0.1:9",
                "--relay-timeout=\(value)",
            ])
            #expect(r.status == 64, "\(value): \(r.stderr)")
            #expect(r.stderr.contains("--relay-timeout must be 1-3600 seconds, got \(value)"), "\(r.stderr)")
        }
        // In range: parsing passes and the command goes on to the card, which is missing here.
        let ok = try await CLI.run([
            "relay", "publish", "--card", "/nonexistent/card.json", "--relay", "https://127.0.0.1:9",
            "--relay-timeout", "3600",
        ])
        #expect(ok.status == 65, "\(ok.stderr)")
        #expect(ok.stderr.contains("cannot publish /nonexistent/card.json"), "\(ok.stderr)")
    }

    /// A real .p8 key in `dir`, made as a user makes one for the local gateway, and the options that deliver with
    /// it to port 9 of loopback, where nothing listens: a push is not answered.
    static func apnsOptions(_ dir: String) async throws -> [String] {
        let made = try await ChildProcess.run(
            "e2ee-gateway",
            ["provider-key", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--out-dir", dir]
        )
        try #require(made.status == 0, "\(made.stderr)")
        return [
            "--apns-url", "https://127.0.0.1:9", "--apns-key-file", "\(dir)/AuthKey_KEY1234567.p8", "--apns-key-id",
            "KEY1234567", "--apns-team-id", "TEAM123456", "--timeout", "5",
        ]
    }

    @Test("--deliver: the client's log lines go to stderr; stdout holds only the result line")
    func logsNeverOnStdout() async throws {
        let dir = try await Self.keys()
        let apns = try await Self.apnsOptions(dir)
        // Nothing listens on port 9 of loopback: the push is not answered and the client logs a warning.
        let r = try await CLI.run(
            [
                "text", "--identity", "\(dir)/alice.identity", "--contacts", dir, "--to", "bob", "--body", "x",
                "--deliver",
            ] + apns
        )
        #expect(r.status == 75, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 1, "stdout: \(r.stdout)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(json["ok"] as? Bool == false)
        #expect(r.stderr.contains("push not answered by APNs"))
    }

    @Test(
        "deliver: a line of a service this sender has no client for gets unsupported-push-service, unsent; the next is sent"
    )
    func deliverOtherServicesLine() async throws {
        let dir = try await Self.keys()
        let apns = try await Self.apnsOptions(dir)
        let token = String(repeating: "ab", count: 32)
        let apnsLine = #"{"body":"{}","device_token":"\#(token)","headers":{"apns-id":"X"}}"#
        let r = try await CLI.run(
            ["deliver", "--window", "1"] + apns,
            stdin: #"{"message":{"token":"t1"},"service":"fcm"}"# + "\n" + apnsLine + "\n"
        )
        // The first failure decides the status: unsupported-push-service's (65), not the second line's (75).
        #expect(r.status == 65, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map { String($0) }
        #expect(lines.count == 2, "stdout: \(r.stdout)")
        let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(first["line"] as? Int == 1)
        #expect(first["ok"] as? Bool == false)
        #expect(first["error"] as? String == "unsupported-push-service")
        #expect(
            first["error_message"] as? String
                == "the line is a request of fcm, and this sender delivers to apns only"
        )
        // Only the APNs line was tried: nothing listens on port 9, so its one attempt failed to connect.
        let second = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect(second["line"] as? Int == 2)
        #expect(second["device_token"] as? String == token)
        #expect(second["attempts"] as? Int == 1)
        #expect(second["local"] as? String == "connectionError")
    }
}
