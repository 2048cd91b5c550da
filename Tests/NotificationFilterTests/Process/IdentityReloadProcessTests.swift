import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A running `e2ee-filter run` and a real `e2ee-send rotate` on the same identity file: the pushes sealed to the
/// new key after the rotation open without a restart (issue 22: they were `fallback`/`unknown-recipient-key` until
/// the filter was restarted, with the default grace and with `--grace-hours 0`).
@Suite("e2ee-filter run: a rotated identity file is picked up without a restart", .serialized)
struct IdentityReloadProcessTests {
    @Test("rotate with the default grace, then --grace-hours 0, under a running filter: every later text alerts")
    func rotationUnderRunningFilter() async throws {
        let dir = NSTemporaryDirectory() + "identity-reload-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/bob-contacts", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func send(_ arguments: [String]) async throws -> ProcessOutput {
            let output = try await ChildProcess.run("e2ee-send", arguments, environment: ["E2EE_IDENTITY_FILE": nil])
            #expect(output.status == 0, "e2ee-send \(arguments.first ?? ""): \(output.stderr)")
            return output
        }
        _ = try await send(["keygen", "--user-id", "alice", "--out-dir", dir + "/alice"])
        _ = try await send([
            "keygen", "--user-id", "bob", "--out-dir", dir + "/bob", "--device-token",
            String(repeating: "ab", count: 32), "--topic", "com.example.app",
        ])
        try FileManager.default.copyItem(
            atPath: dir + "/alice/alice.card.json",
            toPath: dir + "/bob-contacts/alice.card.json"
        )
        let spool = dir + "/spool.jsonl"
        try appendToFile(spool, [])
        let decisions = dir + "/decisions.jsonl"
        let filter = try FilterProcess(
            arguments: [
                "run", "--identity", dir + "/bob/bob.identity", "--contacts", dir + "/bob-contacts", "--spool", spool,
                "--output", decisions, "--state", dir + "/bob.sqlite",
            ],
            directory: dir,
            name: "filter"
        )
        defer { if filter.isRunning { filter.signal(SIGKILL) } }

        // alice sends to bob's card as it is now (after a rotation: the new list, sealed to the new key).
        func text(_ body: String, expecting count: Int) async throws -> [String: Any] {
            let sent = try await send([
                "text", "--identity", dir + "/alice/alice.identity", "--to", dir + "/bob/bob.card.json", "--body", body,
            ])
            let handle = try #require(FileHandle(forWritingAtPath: spool))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(sent.stdout))
            try handle.close()
            try await MultiDeviceProcessTests.waitForLines(decisions, count, [filter])
            return try #require(JSONLines.object(JSONLines.read(decisions).lines[count - 1]))
        }

        let before = try await text("before", expecting: 1)
        #expect(before["decision"] as? String == "alert")

        let graced = try await send(["rotate", "--identity", dir + "/bob/bob.identity"])
        #expect(graced.stderr.contains("the old key opens pushes until"), "\(graced.stderr)")
        #expect(graced.stderr.contains(dir + "/bob/bob.identity"), "rotate names the identity it rewrote")
        let afterGrace = try await text("after the default grace", expecting: 2)
        #expect(afterGrace["decision"] as? String == "alert", "\(afterGrace)")
        #expect(afterGrace["reason"] as? String == "text")

        let revoked = try await send(["rotate", "--identity", dir + "/bob/bob.identity", "--grace-hours", "0"])
        #expect(revoked.stderr.contains("revoked"), "\(revoked.stderr)")
        let afterRevoke = try await text("after --grace-hours 0", expecting: 3)
        #expect(afterRevoke["decision"] as? String == "alert", "\(afterRevoke)")
        #expect(afterRevoke["reason"] as? String == "text")

        filter.signal(SIGTERM)
        #expect(try await filter.wait(timeout: .seconds(60)) == 0, "\(filter.standardError)")
        #expect(JSONLines.read(decisions).lines.count == 3)
    }
}
