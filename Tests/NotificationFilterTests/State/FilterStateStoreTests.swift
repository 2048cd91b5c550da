import Testing

@testable import NotificationFilter

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("FilterStateStore: file, schema and transactions")
struct FilterStateStoreTests {
    @Test("a new file gets WAL, the schema version and the application id")
    func newFileSchema() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("state.sqlite"))
        _ = try store.transaction { tx throws in
            try tx.insertMessageID(account: "a", sender: "carol", messageID: messageID(1), sentAtMs: 1)
        }
        let pragmas = try store.transaction { tx throws in
            try tx.database.withStatement("PRAGMA journal_mode") { s throws(FilterError) in
                try s.step() ? s.text(0) : ""
            }
                + ","
                + String(
                    try tx.database.withStatement("PRAGMA user_version") { s throws(FilterError) in
                        try s.step() ? s.int64(0) : -1
                    }
                )
                + ","
                + String(
                    try tx.database.withStatement("PRAGMA application_id") { s throws(FilterError) in
                        try s.step() ? s.int64(0) : -1
                    }
                )
                + ","
                + String(
                    try tx.database.withStatement("PRAGMA synchronous") { s throws(FilterError) in
                        try s.step() ? s.int64(0) : -1
                    }
                )
        }
        #expect(pragmas == "wal,5,\(0x4532_4546),2")  // schema version 5; synchronous FULL = 2
        #expect(fileExists(dir.file("state.sqlite-wal")))
    }

    @Test("a thrown error rolls back every change of the transaction")
    func rollbackOnThrow() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("state.sqlite"))
        let callID = UUID()
        #expect(throws: TestFailure()) {
            try store.transaction { tx throws in
                #expect(try tx.insertMessageID(account: "a", sender: "carol", messageID: messageID(1), sentAtMs: 10))
                try tx.setCallState(CallStateRecord(account: "a", callID: callID, state: .ringing, updatedAtMs: 10))
                try tx.recordDecision(seq: 1, line: "{\"seq\":1}")
                try tx.setSpoolProgress(path: "/spool", SpoolProgress(byteOffset: 100, lastSeq: 1))
                try tx.enqueuePending(seq: 1, payload: "p", atMs: 10)
                try tx.recordEarlyCancel(
                    EarlyCancelRecord(account: "a", callID: callID, reason: .remoteEnded, atMs: 10)
                )
                try tx.recordMissedCall(
                    MissedCallRecord(
                        account: "a",
                        callID: callID,
                        callerHandle: "h",
                        displayName: nil,
                        atMs: 10,
                        reason: CallRecordReason(rawValue: "r")
                    )
                )
                throw TestFailure()
            }
        }
        let after = try store.transaction { tx throws in
            (
                try tx.insertMessageID(account: "a", sender: "carol", messageID: messageID(1), sentAtMs: 10),
                try tx.callState(account: "a", callID: callID),
                try tx.decision(forSeq: 1),
                try tx.spoolProgress(path: "/spool"),
                try tx.pendingCount(),
                try tx.consumeEarlyCancel(account: "a", callID: callID, caller: "alice"),
                try tx.missedCalls()
            )
        }
        #expect(after.0 == true)  // the id is new again: the first insert was rolled back
        #expect(after.1 == nil)
        #expect(after.2 == nil)
        #expect(after.3 == nil)
        #expect(after.4 == 0)
        #expect(after.5 == nil)
        #expect(after.6.isEmpty)
    }

    @Test("a store error inside the transaction rolls back earlier changes too")
    func rollbackOnStoreError() throws {
        let dir = ScratchDirectory()
        let store = try openStore(dir.file("state.sqlite"))
        #expect(throws: FilterError.self) {
            try store.transaction { tx throws in
                try tx.recordDecision(seq: 7, line: "x")
                _ = try tx.insertMessageID(account: "a", sender: "carol", messageID: [1, 2, 3], sentAtMs: 1)
            }
        }
        #expect(try store.transaction { tx throws in try tx.decision(forSeq: 7) } == nil)
    }

    @Test("reopening the file keeps committed state")
    func reopenKeepsState() throws {
        let dir = ScratchDirectory()
        let path = dir.file("state.sqlite")
        let callID = UUID()
        do {
            let store = try openStore(path)
            try store.transaction { tx throws in
                _ = try tx.insertMessageID(account: "a", sender: "carol", messageID: messageID(9), sentAtMs: 5)
                try tx.setCallState(CallStateRecord(account: "a", callID: callID, state: .active, updatedAtMs: 5))
                try tx.recordDecision(seq: 42, line: "line-42")
                try tx.setSpoolProgress(path: "/s", SpoolProgress(byteOffset: 4096, lastSeq: 42))
                try tx.enqueuePending(seq: 43, payload: "locked", atMs: 6)
            }
        }
        let reopened = try openStore(path)
        try reopened.transaction { tx throws in
            #expect(
                try tx.insertMessageID(account: "a", sender: "carol", messageID: messageID(9), sentAtMs: 5) == false
            )
            #expect(try tx.callState(account: "a", callID: callID)?.state == .active)
            #expect(try tx.decision(forSeq: 42) == "line-42")
            #expect(try tx.lastDecidedSeq() == 42)
            #expect(try tx.spoolProgress(path: "/s") == SpoolProgress(byteOffset: 4096, lastSeq: 42))
            #expect(try tx.pendingPayloads() == [PendingPayload(seq: 43, payload: "locked", enqueuedAtMs: 6)])
        }
    }

    @Test("a file that is not SQLite gives corruptDatabase")
    func garbageFile() throws {
        let dir = ScratchDirectory()
        let path = dir.file("state.sqlite")
        writeScratchFile(path, Array(repeating: 0x5A, count: 8192))
        let error = #expect(throws: FilterError.self) { try openStore(path) }
        #expect(error?.code == .corruptDatabase)
    }

    @Test("another application's SQLite file gives foreignDatabase and is left unchanged")
    func foreignFile() throws {
        let dir = ScratchDirectory()
        let path = dir.file("other.sqlite")
        let other = try StateDatabase(path: path)
        try other.execute("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('x')")
        #expect(chmod(path, 0o600) == 0)  // private, so the refusal below is about whose file it is
        let error = #expect(throws: FilterError.self) { try openStore(path) }
        #expect(error?.code == .foreignDatabase)
        let tables = try other.withStatement("SELECT count(*) FROM sqlite_schema") { s throws(FilterError) in
            try s.step() ? s.int64(0) : -1
        }
        #expect(tables == 1)
    }

    @Test("a new state file and its -wal and -shm files are created with mode 0600")
    func newFileIsPrivate() throws {
        let dir = ScratchDirectory()
        let path = dir.file("state.sqlite")
        let previous = umask(0o022)  // the usual umask, which would leave a file created 0644
        defer { umask(previous) }
        let store = try openStore(path)
        _ = try store.transaction { tx throws in
            try tx.insertMessageID(account: "a", sender: "carol", messageID: messageID(1), sentAtMs: 1)
        }
        #expect(fileMode(path) == 0o600)
        #expect(fileMode(path + "-wal") == 0o600)
        #expect(fileMode(path + "-shm") == 0o600)
    }

    @Test("a state file readable by others is refused with insecureFile and a chmod 600 message, unchanged")
    func sharedFileRefused() throws {
        let dir = ScratchDirectory()
        let path = dir.file("state.sqlite")
        do {
            let store = try openStore(path)
            _ = try store.transaction { tx throws in
                try tx.insertMessageID(account: "a", sender: "carol", messageID: messageID(1), sentAtMs: 1)
            }
        }
        let before = try #require(FileManager.default.contents(atPath: path))
        #expect(chmod(path, 0o644) == 0)
        let error = #expect(throws: FilterError.self) { try openStore(path) }
        #expect(error?.code == .insecureFile)
        #expect(error?.message.contains("run chmod 600 \(path)") == true)
        #expect(error?.message.contains("mode 644") == true)
        #expect(FileManager.default.contents(atPath: path) == before)
        #expect(fileMode(path) == 0o644)

        #expect(chmod(path, 0o600) == 0)
        let reopened = try openStore(path)
        let seenBefore = try reopened.transaction { tx throws in
            try tx.insertMessageID(account: "a", sender: "carol", messageID: messageID(1), sentAtMs: 1)
        }
        #expect(seenBefore == false)  // once private again, the file opens with its state
    }

    @Test("a -wal or -shm file readable by others is refused with insecureFile", arguments: ["-wal", "-shm"])
    func sharedCompanionRefused(suffix: String) throws {
        let dir = ScratchDirectory()
        let path = dir.file("state.sqlite")
        do { _ = try openStore(path) }
        writeScratchFile(path + suffix, [])
        #expect(chmod(path + suffix, 0o640) == 0)
        let error = #expect(throws: FilterError.self) { try openStore(path) }
        #expect(error?.code == .insecureFile)
        #expect(error?.message.contains("run chmod 600 \(path + suffix)") == true)
    }

    @Test("a newer schema version gives schemaTooNew")
    func newerSchema() throws {
        let dir = ScratchDirectory()
        let path = dir.file("state.sqlite")
        _ = try openStore(path)
        let raw = try StateDatabase(path: path)
        try raw.execute("PRAGMA user_version = 99")
        let error = #expect(throws: FilterError.self) { try openStore(path) }
        #expect(error?.code == .schemaTooNew)
        #expect(error == FilterError(code: .schemaTooNew, message: "any message"))
    }
}
