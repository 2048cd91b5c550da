import Logging
import NotificationFilter
import TestSupport
import Testing

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

@Suite("Call events: JSON lines, file sink, hook command")
struct CallEventSinkTests {
    static let id = UUID(uuidString: "6F2A1C3E-0B7D-4E59-9A41-2C8D5F6E7A10")!

    @Test("events encode as exact JSON lines with sorted keys, absent fields left out")
    func jsonLines() {
        let ringing = CallEvent(
            event: .ringing,
            callID: Self.id,
            account: "alice",
            handle: "bob/1",
            displayName: "Bob \"B\"",
            atMs: 1_000
        )
        #expect(
            ringing.jsonLine()
                == #"{"account":"alice","at_ms":1000,"call_id":"6F2A1C3E-0B7D-4E59-9A41-2C8D5F6E7A10","display_name":"Bob \"B\"","event":"ringing","handle":"bob/1"}"#
        )
        let missed = CallEvent(
            event: .missed,
            callID: Self.id,
            account: "alice",
            reason: .ended(.unanswered),
            atMs: 61_000
        )
        #expect(
            missed.jsonLine()
                == #"{"account":"alice","at_ms":61000,"call_id":"6F2A1C3E-0B7D-4E59-9A41-2C8D5F6E7A10","event":"missed","reason":"unanswered"}"#
        )
    }

    @Test("the provider's events reach a JSON-lines file, one line each, in order")
    func fileSink() async throws {
        let dir = ScratchDirectory()
        let path = dir.file("calls.jsonl")
        let clock = TestClock(Date(timeIntervalSince1970: 100))
        do {
            let sink = try JSONLinesCallEventSink(path: path, logger: Logger(label: "test"))
            let provider = CallProvider(sinks: [sink], logger: Logger(label: "test"), clock: clock.wallClock)
            try await provider.reportNewIncomingCall(
                uuid: Self.id,
                update: callUpdate(name: nil),
                ringTimeoutSeconds: 5
            )
            clock.advance(seconds: 5)
            await provider.expireRinging(now: clock.now)
        }
        let text = try #require(readScratchFile(path))
        #expect(
            text == """
                {"account":"alice","at_ms":100000,"call_id":"6F2A1C3E-0B7D-4E59-9A41-2C8D5F6E7A10","event":"ringing","handle":"bob"}
                {"account":"alice","at_ms":105000,"call_id":"6F2A1C3E-0B7D-4E59-9A41-2C8D5F6E7A10","event":"missed","handle":"bob","reason":"unanswered"}

                """
        )
    }

    @Test("a file sink on a missing directory is a typed error")
    func fileSinkError() {
        #expect(throws: FilterError(code: .cannotOpen, message: "")) {
            try JSONLinesCallEventSink(path: "/nonexistent-dir/x.jsonl", logger: Logger(label: "test"))
        }
    }

    @Test("the hook command receives each event's JSON line on stdin")
    func hook() async throws {
        let dir = ScratchDirectory()
        let out = dir.file("hook.jsonl")
        let hook = try HookCommandCallEventSink(command: "cat >> '\(out)'", logger: Logger(label: "test"))
        let event = CallEvent(event: .answered, callID: Self.id, account: "alice", atMs: 7)
        hook.emit(event)
        #expect(await hook.waitUntilIdle(timeout: .seconds(60)))
        hook.emit(CallEvent(event: .ended, callID: Self.id, account: "alice", reason: .ended(.localEnded), atMs: 8))
        #expect(await hook.waitUntilIdle(timeout: .seconds(60)))
        #expect(
            readScratchFile(out)
                == event.jsonLine() + "\n"
                + #"{"account":"alice","at_ms":8,"call_id":"6F2A1C3E-0B7D-4E59-9A41-2C8D5F6E7A10","event":"ended","reason":"localEnded"}"#
                + "\n"
        )
    }

    @Test("a failing, missing or non-reading hook is logged and never breaks the caller")
    func hookFailures() async throws {
        let failing = try HookCommandCallEventSink(
            arguments: ["/bin/sh", "-c", "exit 3"],
            logger: Logger(label: "test")
        )
        let missing = try HookCommandCallEventSink(arguments: ["/nonexistent/hook"], logger: Logger(label: "test"))
        let slow = try HookCommandCallEventSink(
            arguments: ["/bin/sleep", "30"],
            timeout: .milliseconds(200),
            logger: Logger(label: "test")
        )
        let event = CallEvent(event: .ringing, callID: Self.id, account: "a", atMs: 1)
        failing.emit(event)
        missing.emit(event)
        slow.emit(event)
        #expect(await failing.waitUntilIdle(timeout: .seconds(60)))
        #expect(await missing.waitUntilIdle(timeout: .seconds(60)))
        #expect(await slow.waitUntilIdle(timeout: .seconds(60)))  // killed after its timeout
        #expect(throws: FilterError(code: .invalidHookCommand, message: "")) {
            try HookCommandCallEventSink(arguments: [], logger: Logger(label: "test"))
        }
    }
}

/// The whole file at `path` as UTF-8, or nil if it cannot be read.
func readScratchFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        bytes += buffer[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}
