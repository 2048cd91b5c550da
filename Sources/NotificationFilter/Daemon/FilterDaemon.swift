public import E2EECore
public import Logging
public import PushTransport
public import ServiceLifecycle
import SystemPackage

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How `e2ee-filter run` is wired: where payloads come from and where decisions and events go.
public struct FilterDaemonConfiguration: Sendable {
    public enum Input: Sendable, Hashable {
        /// JSON lines on standard input (request lines as `e2ee-send` prints them, spool records, bare bodies).
        case standardInput
        /// The gateway's spool file, followed as it grows, resumed from the committed offset after a restart.
        case spool(path: String)
    }

    public var input: Input
    /// Where decisions go: nil for standard output, or a file (appended; reconciled after a crash).
    public var decisionsPath: String?
    /// At the end of a spool, stop instead of waiting for more.
    public var exitAtEndOfInput = false
    /// This device's push token: spool records and request lines addressed to another token (by ``transport``'s
    /// `isSameDevice`: for APNs, hex in any case) are skipped without a decision, as a phone never receives another
    /// phone's pushes. Nil decides every line.
    public var deviceToken: String?
    /// The push service whose lines these are: it says whether a line's token is this device's.
    public var transport: any PushTransport.Type = APNsAlertTransport.self
    /// How many available payloads are decided in one transaction (group commit).
    public var batchSize = 64
    /// How many batches are read and opened ahead of the one being decided (at least 1).
    public var batchesAhead = 2
    /// How often ring timeouts are checked.
    public var tickInterval: Duration = .milliseconds(250)
    /// The state is pruned (``FilterEngine/prune(decisionsWrittenThrough:)``) after the batch that brings the
    /// payloads since the last prune to this many, or once this much time of the engine's clock has passed since
    /// then, whichever comes first.
    public var pruneEveryPayloads = 4_096
    public var pruneIntervalMs: Int64 = 60_000

    public init(input: Input, decisionsPath: String? = nil) {
        self.input = input
        self.decisionsPath = decisionsPath
    }
}

/// `e2ee-filter run`: consumes payloads and writes exactly one decision per payload, in input order.
///
/// A `Service`: on SIGTERM (graceful shutdown) it finishes the batch in flight, writes its decisions and returns,
/// so the process exits 0. Killed with SIGKILL at any point, a restart resumes from the committed spool offset and
/// first writes the decisions that were committed but not yet written, so every payload ends with exactly one
/// decision in the decisions file.
public final class FilterDaemon: Service, Sendable {
    let configuration: FilterDaemonConfiguration
    let engine: FilterEngine
    let events: EventOutbox?
    let logger: Logger
    /// Gives the identity of a locked account once it can be unlocked (polled), or nil while still locked.
    let unlock: @Sendable (String) -> Identity?
    /// Gives the accounts whose identity files changed since they were read (a key rotation), read anew
    /// (``IdentityFileWatcher/changed()``); asked before each batch is decided.
    let identityChanges: @Sendable () -> [(name: String, identity: Identity)]

    public init(
        configuration: FilterDaemonConfiguration,
        engine: FilterEngine,
        events: EventOutbox?,
        unlock: @escaping @Sendable (String) -> Identity? = { _ in nil },
        identityChanges: @escaping @Sendable () -> [(name: String, identity: Identity)] = { [] },
        logger: Logger
    ) {
        self.configuration = configuration
        self.engine = engine
        self.events = events
        self.unlock = unlock
        self.identityChanges = identityChanges
        self.logger = logger
    }

    public func run() async throws {
        let output =
            try self.configuration.decisionsPath.map { path throws(FilterError) in try LineWriter.open(path: path)
            } ?? LineWriter.standardOutput
        let spoolPath: String?
        let source: LineSource
        var startSeq: Int64 = 0
        switch self.configuration.input {
        case .standardInput:
            spoolPath = nil
            source = LineSource(fd: 0, startOffset: 0, follow: false, maximumLineLength: PayloadInput.maximumLineLength)
        case .spool(let path):
            spoolPath = path
            let fd: FileDescriptor
            do {
                fd = try FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec])
            } catch {
                throw FilterError("cannot open the spool \(path): \(error); check the path")
            }
            let progress = try self.engine.store.transaction { tx in try tx.spoolProgress(path: path) }
            let offset = progress?.byteOffset ?? 0
            startSeq = progress?.lastSeq ?? 0
            _ = try? fd.seek(offset: offset, from: .start)
            source = LineSource(
                fd: fd.rawValue,
                startOffset: offset,
                follow: !self.configuration.exitAtEndOfInput,
                maximumLineLength: PayloadInput.maximumLineLength
            )
        }

        // After a crash: write what was committed but not written, then restore ringing calls.
        if spoolPath != nil, output.path != nil {
            let lastSeq = output.lastLine().flatMap { try? JSONDecoder().decode(SeqOnly.self, from: Data($0)).seq } ?? 0
            let missing = try self.engine.store.transaction { tx in try tx.decisionLines(after: lastSeq) }
            if !missing.isEmpty {
                self.logger.notice(
                    "re-emitting decisions committed before a restart",
                    metadata: ["count": "\(missing.count)"]
                )
            }
            try output.write(missing)
        }
        try self.events?.reconcile()
        try await self.engine.recoverAfterRestart()
        // Payloads kept while locked in an earlier run, now unlocked: decided before any new input.
        if await self.engine.hasKeptPayloads {
            let decisions = try await self.engine.decideKept(emit: { try output.write($0) })
            if !decisions.isEmpty {
                self.logger.notice("kept payloads decided", metadata: ["count": "\(decisions.count)"])
            }
        }

        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.configuration.tickInterval)
                try? await self.engine.expireRinging()
                // Answers and declines recorded by `e2ee-filter answer|decline` on this state file.
                _ = try? await self.engine.applyCallActions()
                if await self.engine.isLocked {
                    try? await self.tryUnlock(output: output)
                } else if await self.engine.hasKeptPayloads {
                    // Kept payloads left over (a failed write while draining): drain them before newer ones.
                    _ = try? await self.engine.decideKept(emit: { try output.write($0) })
                }
            }
        }
        defer { ticker.cancel() }

        let firstSeq = startSeq
        let inputCount = try await cancelWhenGracefulShutdown {
            var sincePrune = 0
            var lastPruneMs = self.engine.clock.nowMs
            var writtenThrough: Int64? = nil
            // Two stages: the next batches are read, parsed and opened (decrypted and verified, the expensive half)
            // while this one is decided and committed, so both cores work. Lines are read in order, one batch
            // after another; batches are opened concurrently and decided in input order.
            let spooled = spoolPath != nil
            var ahead: [(read: Task<ReadLines?, Never>, batch: Task<ReadBatch?, Never>)] = []
            // The read before the next one (still needed when `ahead` is empty: it numbers the lines after it).
            var lastRead: Task<ReadLines?, Never>? = nil
            func readAhead() {
                let previous = lastRead
                let read = Task { () -> ReadLines? in
                    var after = firstSeq
                    if let previous {
                        guard let last = await previous.value else { return nil }
                        after = last.lastLineNumber
                    }
                    return await self.readLines(from: source, after: after, spooled: spooled)
                }
                let batch = Task { () -> ReadBatch? in
                    guard let lines = await read.value else { return nil }
                    return await self.opened(lines)
                }
                ahead.append((read, batch))
                lastRead = read
            }
            for _ in 0..<max(1, self.configuration.batchesAhead) { readAhead() }
            defer { for pending in ahead { pending.read.cancel() } }
            var lineNumber = firstSeq
            while let next = ahead.first {
                // SIGTERM ends the waits for input; the batches already read are still decided.
                let reads = ahead.map(\.read)
                guard
                    let batch = await withTaskCancellationHandler(
                        operation: { await next.batch.value },
                        onCancel: { for read in reads { read.cancel() } }
                    )
                else { break }
                ahead.removeFirst()
                lineNumber = batch.lastLineNumber
                if Task.isCancelled || Task.isShuttingDownGracefully {
                    for pending in ahead { pending.read.cancel() }
                } else {
                    readAhead()
                }
                let spool = spoolPath.map { ($0, batch.endOffset) }
                guard let opened = batch.opened else {
                    // Only other devices' pushes: not ours to decide (no decision line), but read past.
                    if let spool { try await self.engine.skip(spool: spool, lastSeq: batch.lastLineNumber) }
                    continue
                }
                // A rotated identity file is read before the batch is decided: a push sealed to the new key (which
                // senders learn only after the file was written) opens; a batch opened ahead with the old keys is
                // opened again.
                for change in self.identityChanges() {
                    await self.engine.replaceIdentity(account: change.name, with: change.identity)
                }
                let outcome = try await self.engine.process(opened, spool: spool, deduplicateBySeq: spoolPath != nil)
                try output.write(outcome.lines)
                if let last = outcome.decisions.last?.seq { writtenThrough = max(writtenThrough ?? last, last) }
                sincePrune += opened.inputs.count
                let nowMs = self.engine.clock.nowMs
                if sincePrune >= self.configuration.pruneEveryPayloads
                    || nowMs - lastPruneMs >= self.configuration.pruneIntervalMs
                {
                    try await self.engine.prune(decisionsWrittenThrough: writtenThrough)
                    sincePrune = 0
                    lastPruneMs = nowMs
                }
                if outcome.showLockedAlert { try self.lockedAlert(count: outcome.keptWhileLocked) }
            }
            return lineNumber
        }
        // Ringing calls keep their deadlines in the state file; a restart restores or expires them.
        self.logger.info("filter stopped", metadata: ["inputs": "\(inputCount)"])
    }

    /// A batch of input lines, read and parsed.
    private struct ReadLines: Sendable {
        /// The payloads addressed to this device.
        var inputs: [PayloadInput]
        /// The input number of the batch's last line (a line without its own seq gets the one after the previous).
        var lastLineNumber: Int64
        /// The byte offset just after the batch's last line.
        var endOffset: Int64
    }

    /// A batch of input lines, read and opened ahead of its decisions.
    private struct ReadBatch: Sendable {
        /// The payloads addressed to this device, opened; nil when every line was for another device.
        var opened: FilterEngine.OpenedBatch?
        var lastLineNumber: Int64
        var endOffset: Int64
    }

    /// Reads the next batch of available lines (waiting for at least one) and parses it; nil at the end of input,
    /// or when cancelled (SIGTERM) while waiting for input.
    private func readLines(from source: LineSource, after lineNumber: Int64, spooled: Bool) async -> ReadLines? {
        guard let lines = await source.nextLines(limit: self.configuration.batchSize), let last = lines.last else {
            return nil
        }
        // A line without its own seq gets the one after the previous input's (spool: resumed from the committed
        // progress, so a restart never reuses a number).
        var lineNumber = lineNumber
        var inputs: [PayloadInput] = []
        inputs.reserveCapacity(lines.count)
        for line in lines {
            // An oversized line is neither a request line nor a spool record: a bare body, too large.
            let input =
                line.oversized
                ? PayloadInput(seq: lineNumber + 1, apnsID: nil, body: line.bytes)
                : PayloadInput.parse(line: line.bytes, defaultSeq: lineNumber + 1)
            lineNumber = spooled ? max(lineNumber + 1, input.seq) : lineNumber + 1
            inputs.append(input)
        }
        if let token = self.configuration.deviceToken {
            // Another device's pushes: not ours to decide.
            let count = inputs.count
            let transport = self.configuration.transport
            inputs.removeAll { !$0.isAddressed(to: token, transport: transport) }
            if count > inputs.count {
                self.logger.debug("pushes for other devices skipped", metadata: ["count": "\(count - inputs.count)"])
            }
        }
        return ReadLines(inputs: inputs, lastLineNumber: lineNumber, endOffset: last.endOffset)
    }

    /// Opens a batch read by ``readLines(from:after:spooled:)``.
    private func opened(_ lines: ReadLines) async -> ReadBatch {
        let opened = lines.inputs.isEmpty ? nil : await self.engine.open(lines.inputs)
        return ReadBatch(opened: opened, lastLineNumber: lines.lastLineNumber, endOffset: lines.endOffset)
    }

    private func tryUnlock(output: LineWriter) async throws {
        for account in await self.engine.accounts where account.isLocked {
            if let identity = self.unlock(account.name) {
                // Written in order inside the engine, before any newer payload is decided.
                let decisions = try await self.engine.unlock(
                    account: account.name,
                    identity: identity,
                    emit: { try output.write($0) }
                )
                self.logger.notice("account unlocked; kept payloads decided", metadata: ["count": "\(decisions.count)"])
            }
        }
    }

    private func lockedAlert(count: Int) throws {
        let line =
            "{\"alert\":{\"body\":\"Unlock the app to see new messages.\",\"title\":\"New messages\"},\"event\":\"locked-alert\",\"kept\":\(count)}"
        try self.events?.record(event: "locked-alert", account: "*", callID: UUID().uuidText, line: line)
    }
}

private struct SeqOnly: Decodable { var seq: Int64 }
