public import E2EECore
import Locking
public import Logging
public import PushTransport

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The device-side decision path: decrypt, classify, decide, remember — one decision per payload.
///
/// Each batch of payloads is decided in ONE state transaction (replay set, call states, cancels that came early,
/// missed calls, the decision log and the spool offset commit together), and only then are calls handed to the
/// reporter and decisions returned for output. A process killed at any point therefore either decided a payload
/// durably or not at all; see ``FilterDaemon`` for how output is reconciled after a crash.
public actor FilterEngine {
    public let store: FilterStateStore
    public private(set) var accounts: [FilterAccount]
    public let policy: FilterPolicy
    let reporter: any CallReporting
    let clock: WallClock
    let logger: Logger

    /// The accounts as opening needs them (with the key id → account index), readable outside the actor
    /// (``open(_:)``); replaced on every change.
    private nonisolated let openContextCopy: PThreadMutex<OpenContext>
    private var lockedNoticeShown = false
    /// Payloads kept while locked wait to be decided: every newer payload is kept behind them, so after unlock
    /// the kept ones are decided first, in order (see ``decideKept(emit:)``).
    private var keptWaiting = false

    /// Creates an engine.
    ///
    /// - Parameters:
    ///   - store: the durable state.
    ///   - accounts: the accounts served; payloads are mapped to them by recipient key id.
    ///   - policy: the rules.
    ///   - reporter: where calls that should ring are handed off.
    ///   - clock: the wall clock.
    ///   - transport: the push service whose bodies this device receives: it unframes each into its envelope.
    ///   - logger: decisions are logged as codes only: never keys, plaintext or envelopes.
    public init(
        store: FilterStateStore,
        accounts: [FilterAccount],
        policy: FilterPolicy = FilterPolicy(),
        reporter: any CallReporting,
        clock: WallClock,
        transport: any PushTransport.Type = APNsAlertTransport.self,
        logger: Logger
    ) throws {
        self.store = store
        self.accounts = accounts
        self.policy = policy
        self.reporter = reporter
        self.clock = clock
        self.logger = logger
        self.keptWaiting = try store.transaction { tx in try !tx.pendingPayloads(limit: 1).isEmpty }
        self.openContextCopy = PThreadMutex(
            OpenContext(transport: transport, accounts: accounts, accountByKeyID: Self.index(accounts))
        )
    }

    /// The accounts changed (an unlock): index them again, and let batches opened before be opened again.
    private func accountsChanged() {
        let (accounts, index) = (self.accounts, Self.index(self.accounts))
        self.openContextCopy.withLock { context in
            context = OpenContext(
                transport: context.transport,
                accounts: accounts,
                accountByKeyID: index,
                generation: context.generation + 1
            )
        }
    }

    nonisolated var openContext: OpenContext { self.openContextCopy.withLock { $0 } }

    private static func index(_ accounts: [FilterAccount]) -> [KeyID: Int] {
        var map: [KeyID: Int] = [:]
        for (i, account) in accounts.enumerated() {
            for id in account.deviceKeyIDs { map[id] = i }
        }
        return map
    }

    /// Whether any account is locked (its payloads wait).
    public var isLocked: Bool { self.accounts.contains(where: \.isLocked) }

    /// Whether payloads kept while locked are still waiting for ``decideKept(emit:)``.
    public var hasKeptPayloads: Bool { self.keptWaiting }

    // MARK: - processing

    /// The outcome of a batch.
    public struct Outcome: Sendable {
        /// Decisions, in input order, durably committed.
        public var decisions: [FilterDecision] = []
        /// The same decisions as JSON lines, encoded once (the decision log stores the same bytes).
        public var lines: [String] = []
        /// Payloads kept because keys are locked (decided after unlock).
        public var keptWhileLocked = 0
        /// True once per locked period: show the one generic "locked" alert.
        public var showLockedAlert = false
    }

    /// A batch of payloads opened (decrypted and verified) ahead of its decision, off the engine's actor: the
    /// daemon opens the next batch on one core while the engine commits the one before it on the other.
    ///
    /// The batch is decided as of the moment it was opened (its clock reading serves both halves). A batch opened
    /// while an account was locked, or before an unlock, is opened again when it is processed.
    public struct OpenedBatch: Sendable {
        public let inputs: [PayloadInput]
        let opened: [Opened]?
        let nowMs: Int64
        let generation: Int
    }

    /// Opens `inputs` without the actor (it reads nothing of the state): the stateless half of their decisions.
    /// Nothing is opened while an account is locked (the payloads will be kept).
    public nonisolated func open(_ inputs: [PayloadInput]) async -> OpenedBatch {
        let context = self.openContext
        let nowMs = self.clock.nowMs
        let opened = context.isLocked ? nil : await Self.openAll(inputs, context, nowMs: nowMs)
        return OpenedBatch(inputs: inputs, opened: opened, nowMs: nowMs, generation: context.generation)
    }

    /// Decides a batch of payloads in one transaction.
    ///
    /// - Parameters:
    ///   - inputs: the payloads, in input order.
    ///   - spool: the spool path and the byte offset just after the last input, committed with the decisions.
    /// - Returns: the committed decisions (and, while locked, how many payloads were kept instead).
    /// - Throws: a ``FilterError`` when the state cannot be written; nothing of the batch is then committed.
    ///   - deduplicateBySeq: skip inputs whose sequence number was decided before (spool input, whose `seq` is
    ///     unique and stable across restarts). Off for standard input, whose line numbers restart with each run.
    public func process(
        _ inputs: [PayloadInput],
        spool: (path: String, offset: Int64)? = nil,
        deduplicateBySeq: Bool = true
    ) async throws -> Outcome {
        try await self.process(self.open(inputs), spool: spool, deduplicateBySeq: deduplicateBySeq)
    }

    /// Decides a batch opened by ``open(_:)`` in one transaction (see ``process(_:spool:deduplicateBySeq:)``).
    public func process(
        _ batch: OpenedBatch,
        spool: (path: String, offset: Int64)? = nil,
        deduplicateBySeq: Bool = true
    ) async throws -> Outcome {
        let inputs = batch.inputs
        let nowMs = batch.nowMs
        var outcome = Outcome()
        if self.isLocked || self.keptWaiting {
            let kept = try self.store.transaction { tx in
                var kept = 0
                for input in inputs where try !deduplicateBySeq || tx.decision(forSeq: input.seq) == nil {
                    if try tx.enqueuePending(seq: input.seq, payload: PayloadInput.pendingText(input), atMs: nowMs) {
                        kept += 1
                    }
                }
                if let spool, let last = inputs.last {
                    try tx.setSpoolProgress(
                        path: spool.path,
                        SpoolProgress(byteOffset: spool.offset, lastSeq: last.seq)
                    )
                }
                return kept
            }
            if kept > 0 { self.keptWaiting = true }
            outcome.keptWhileLocked = kept
            if kept > 0 && self.isLocked && !self.lockedNoticeShown {
                self.lockedNoticeShown = true
                outcome.showLockedAlert = true
            }
            self.logger.info("payloads kept while keys are locked", metadata: ["count": "\(kept)"])
            return outcome
        }

        let context = self.openContext
        let opened =
            if let opened = batch.opened, batch.generation == context.generation {
                opened
            } else {
                await Self.openAll(inputs, context, nowMs: nowMs)
            }
        return try await self.decideNow(
            inputs,
            opened: opened,
            spool: spool,
            deduplicateBySeq: deduplicateBySeq,
            nowMs: nowMs
        )
    }

    /// Records that the spool was read through `offset` (input `lastSeq`) without deciding anything: lines for
    /// other devices (``FilterDaemonConfiguration/deviceToken``).
    public func skip(spool: (path: String, offset: Int64), lastSeq: Int64) throws {
        try self.store.transaction { tx in
            try tx.setSpoolProgress(path: spool.path, SpoolProgress(byteOffset: spool.offset, lastSeq: lastSeq))
        }
    }

    /// Decides a batch now (not locked, nothing kept waiting, or the kept payloads themselves).
    private func decideNow(
        _ inputs: [PayloadInput],
        opened: [Opened]? = nil,
        spool: (path: String, offset: Int64)?,
        deduplicateBySeq: Bool,
        nowMs: Int64
    ) async throws -> Outcome {
        var outcome = Outcome()
        // Decrypt and verify outside the transaction (pure work, perhaps done ahead), then decide with state inside.
        let opened = if let opened { opened } else { await Self.openAll(inputs, self.openContext, nowMs: nowMs) }
        // The provider's answer for each invite is part of its decision: taken before the transaction (no await in
        // it), updated by each invite admitted and each call ended in the batch. Nothing runs on this actor between
        // the copy and the commit (the transaction is synchronous), so a `ring` decision is a call that rings.
        var admission = await self.reporter.admission()
        let hasInvite = opened.contains { result in
            if case .opened(let message) = result, case .callInvite = message.message.content { return true }
            return false
        }
        let (decisions, lines, actions) = try self.store.transaction {
            tx -> ([FilterDecision], [String], [PostCommit]) in
            var decisions: [FilterDecision] = []
            var lines: [String] = []
            var actions: [PostCommit] = []
            if hasInvite {
                // The live calls an invite is admitted against are the state file's, not this process's memory:
                // `once` (a process per push) and `run` on one state file refuse the same third call.
                admission = try self.storedAdmission(admission, nowMs: nowMs, tx: tx, actions: &actions)
            }
            for (input, result) in zip(inputs, opened) {
                if deduplicateBySeq, try tx.decision(forSeq: input.seq) != nil {
                    // Already decided before a restart: the daemon re-emits it from the log; decide nothing twice.
                    continue
                }
                var decision = try self.decide(
                    input,
                    result,
                    nowMs: nowMs,
                    tx: tx,
                    admission: &admission,
                    actions: &actions
                )
                decision.seq = input.seq
                decision.apnsID = input.apnsID
                let line = decision.jsonLine()
                if deduplicateBySeq { _ = try tx.recordDecision(seq: input.seq, line: line) }
                decisions.append(decision)
                lines.append(line)
            }
            if let spool, let last = inputs.last {
                try tx.setSpoolProgress(path: spool.path, SpoolProgress(byteOffset: spool.offset, lastSeq: last.seq))
            }
            return (decisions, lines, actions)
        }
        for decision in decisions {
            self.logger.debug(
                "decided",
                metadata: [
                    "seq": "\(decision.seq)", "decision": "\(decision.decision)", "reason": "\(decision.reason)",
                ]
            )
        }
        await self.perform(actions)
        outcome.decisions = decisions
        outcome.lines = lines
        return outcome
    }

    // MARK: - unlock

    /// Unlocks an account and decides every payload kept while locked, in input order.
    ///
    /// - Parameter emit: called with each batch's decision lines, in order, before any newer payload is decided
    ///   (the daemon writes them there, so its output stays in input order).
    /// - Returns: the decisions of the kept payloads (empty if another account is still locked).
    public func unlock(
        account name: String,
        identity: Identity,
        emit: (@Sendable ([String]) throws -> Void)? = nil
    ) async throws -> [FilterDecision] {
        guard let index = self.accounts.firstIndex(where: { $0.name == name }) else { return [] }
        self.accounts[index].unlock(with: identity)
        self.accountsChanged()
        guard !self.isLocked else { return [] }
        self.lockedNoticeShown = false
        return try await self.decideKept(emit: emit)
    }

    /// Takes a newer version of an unlocked account's identity file (a key rotation: a new current device key, an
    /// old key's `expires_at_ms`), between batches: every batch decided from now on opens with it, including batches
    /// already opened ahead with the old keys (they are opened again).
    ///
    /// - Returns: false when nothing changed: no such account, the account is locked (its unlock reads the file),
    ///   or the file now holds another device (another user or signing key: that is a different account, and the
    ///   keys in use are kept; restart the filter to serve it).
    @discardableResult
    public func replaceIdentity(account name: String, with identity: Identity) -> Bool {
        guard let index = self.accounts.firstIndex(where: { $0.name == name }),
            let current = self.accounts[index].identity
        else { return false }
        guard current.userID == identity.userID, current.signingKey.publicKey == identity.signingKey.publicKey else {
            self.logger.error(
                "the identity file now holds another device (\(identity.userID)/\(identity.deviceID)); the keys of \(current.userID)/\(current.deviceID) stay in use: restart the filter to serve the new one",
                metadata: ["account": "\(name)"]
            )
            return false
        }
        let before = Set(current.deviceKeys.map(\.keyID))
        self.accounts[index].unlock(with: identity)
        self.accountsChanged()
        self.logger.notice(
            "identity file reloaded",
            metadata: [
                "account": "\(name)", "keys": "\(identity.deviceKeys.count)",
                "newKeys": "\(Set(identity.deviceKeys.map(\.keyID)).subtracting(before).count)",
            ]
        )
        return true
    }

    /// Decides every payload kept while locked, in input order, including those kept behind them while this runs;
    /// until none is left, ``process(_:spool:deduplicateBySeq:)`` keeps newer payloads behind them.
    ///
    /// - Parameter emit: called with each batch's decision lines, in order (see ``unlock(account:identity:emit:)``).
    /// - Returns: the decisions, in order; empty while an account is locked.
    public func decideKept(emit: (@Sendable ([String]) throws -> Void)? = nil) async throws -> [FilterDecision] {
        guard !self.isLocked else { return [] }
        var all: [FilterDecision] = []
        while true {
            let pending = try self.store.transaction { tx in try tx.pendingPayloads(limit: 256) }
            if pending.isEmpty {
                self.keptWaiting = false
                break
            }
            let inputs = pending.map { PayloadInput.parsePending($0.payload, seq: $0.seq) }
            let outcome = try await self.decideNow(inputs, spool: nil, deduplicateBySeq: true, nowMs: self.clock.nowMs)
            try self.store.transaction { tx in
                for item in pending { _ = try tx.deletePending(seq: item.seq) }
            }
            try emit?(outcome.lines)
            all += outcome.decisions
        }
        return all
    }

    // MARK: - ring timeouts and restart

    /// Ends every ringing call whose ring window has passed: unanswered, recorded as missed.
    public func expireRinging() async throws {
        let nowMs = self.clock.nowMs
        let due = try self.store.transaction { tx in try Self.expireRings(dueBy: nowMs, tx: tx) }
        for ring in due {
            await self.reporter.endCall(account: ring.account, callID: ring.callID, cause: .unanswered, atMs: nowMs)
        }
    }

    /// Records every ring whose window has passed by `nowMs` as missed (unanswered), in `tx`; the caller ends them
    /// in the call provider after the commit.
    static func expireRings(dueBy nowMs: Int64, tx: borrowing FilterStateTransaction) throws -> [RingRecord] {
        let due = try tx.rings(dueBy: nowMs)
        for ring in due {
            _ = try tx.deleteRing(account: ring.account, callID: ring.callID)
            try tx.setCallState(
                CallStateRecord(
                    account: ring.account,
                    callID: ring.callID,
                    state: .missed,
                    updatedAtMs: nowMs,
                    endReason: .ended(.unanswered)
                )
            )
            _ = try tx.recordMissedCall(
                MissedCallRecord(
                    account: ring.account,
                    callID: ring.callID,
                    callerHandle: ring.callerHandle,
                    displayName: ring.displayName,
                    atMs: nowMs,
                    reason: .ended(.unanswered)
                )
            )
        }
        return due
    }

    /// The provider's rules with the live calls of the state file: rings whose window has passed are ended first
    /// (recorded as missed, and ended in the provider after the commit, before any new call is handed off), then
    /// every remaining ring and every active answered call counts against `maximumCallGroups`.
    func storedAdmission(
        _ provider: CallAdmission,
        nowMs: Int64,
        tx: borrowing FilterStateTransaction,
        actions: inout [PostCommit]
    ) throws -> CallAdmission {
        for ring in try Self.expireRings(dueBy: nowMs, tx: tx) {
            actions.append(.end(account: ring.account, callID: ring.callID, cause: .unanswered, atMs: nowMs))
        }
        return CallAdmission(
            configuration: provider.configuration,
            liveIDs: try tx.liveCallIDs(),
            endedIDs: provider.endedIDs
        )
    }

    /// After a restart: gives the reporter back the calls that were ringing (without a second ring) and expires
    /// those whose window passed while the process was down.
    public func recoverAfterRestart() async throws {
        let (rings, unfinished, refused, answered, declines) = try self.store.transaction { tx in
            (
                try tx.rings(dueBy: Int64.max), try tx.callsEndedWithoutEndEvent(), try tx.refusedCallsWithoutEvent(),
                try tx.callActions(answeredOnly: true).compactMap(CallActionRecord.init), try tx.remoteDeclines()
            )
        }
        let nowMs = self.clock.nowMs
        // `remote-declined` events decided before the crash and perhaps not recorded: the outbox drops a duplicate.
        try await self.reportRemoteDeclines(declines)
        // Refused invites whose `missed` event was lost in a crash: record it now (the decision was committed).
        for call in refused {
            guard let refusal = call.reason.refusal else { continue }
            await self.reporter.reportRefused(
                FilterDecision.Handoff(
                    callID: call.callID,
                    callerHandle: call.callerHandle ?? "unknown",
                    displayName: call.displayName ?? "",
                    hasVideo: false,
                    account: call.account,
                    ringDeadlineMs: call.atMs
                ),
                refusal: refusal,
                atMs: call.atMs
            )
        }
        // Calls whose end was decided but whose end event was lost in a crash: re-establish, then end them.
        // A call whose ring and end were decided in one batch may have lost both events: it rings (once) and ends.
        for call in unfinished {
            guard let uuid = UUID(uuidString: call.callID) else { continue }
            let cause: CallEndCause = call.endReason?.cancelReason.map { .cancelled($0) } ?? .unanswered
            await self.reporter.restoreRinging(
                FilterDecision.Handoff(
                    callID: uuid,
                    callerHandle: call.callerHandle ?? "unknown",
                    displayName: call.displayName ?? "",
                    hasVideo: call.hasVideo,
                    account: call.account,
                    ringDeadlineMs: nowMs + 1000
                )
            )
            if let action = answered.first(where: { $0.account == call.account && $0.handoff.callID == uuid }) {
                // Answered before it ended: it ends as `ended`, never `missed`.
                await self.reporter.apply(.answer, action.handoff)
            }
            await self.reporter.endCall(account: call.account, callID: uuid, cause: cause, atMs: nowMs)
        }
        // Calls answered and still active: back in the provider as active (a later cancel ends them as `ended`).
        for action in answered where action.callState == .active {
            await self.reporter.apply(.answer, action.handoff)
        }
        for ring in rings where ring.deadlineMs > nowMs {
            await self.reporter.restoreRinging(
                FilterDecision.Handoff(
                    callID: ring.callID,
                    callerHandle: ring.callerHandle,
                    displayName: ring.displayName,
                    hasVideo: ring.hasVideo,
                    account: ring.account,
                    ringDeadlineMs: ring.deadlineMs
                )
            )
        }
        try await self.expireRinging()
        try await self.applyCallActions()
    }

    // MARK: - bounded state

    /// What one ``prune(decisionsWrittenThrough:)`` removed, per table.
    public struct PruneCounts: Sendable, Hashable {
        public var replay = 0
        public var finishedCalls = 0
        public var earlyCancels = 0
        /// Missed-call records of pruned calls.
        public var missedCalls = 0
        public var decisions = 0
        public var events = 0
    }

    /// Forgets what can no longer change a decision, in one transaction, so the state stays bounded:
    /// message ids sent before the replay window (older payloads are `stale` before the replay check), ended and
    /// missed calls last updated before the replay window (every later payload about them is `stale` too, unless
    /// the caller reuses the call id), cancels that waited for their invite longer than
    /// ``FilterPolicy/earlyCancelRetentionMs``, decision lines already written to the output, and the outbox
    /// events of calls no longer in the state (and notices).
    ///
    /// - Parameter seq: the highest sequence number whose decision the daemon has written to its output; nil keeps
    ///   the decision log.
    @discardableResult
    public func prune(decisionsWrittenThrough seq: Int64?) throws -> PruneCounts {
        let nowMs = self.clock.nowMs
        let policy = self.policy
        let counts = try self.store.transaction { tx in
            var counts = PruneCounts()
            counts.replay = try tx.pruneReplay(olderThanMs: nowMs - policy.replayRetentionMs)
            counts.finishedCalls = try tx.pruneFinishedCalls(olderThanMs: nowMs - policy.replayRetentionMs)
            counts.earlyCancels = try tx.pruneEarlyCancels(olderThanMs: nowMs - policy.earlyCancelRetentionMs)
            counts.missedCalls = try tx.pruneCallers(missedOlderThanMs: nowMs - policy.replayRetentionMs)
            try tx.pruneCallActions()
            if let seq { counts.decisions = try tx.pruneDecisionLog(throughSeq: seq) }
            counts.events = try tx.pruneEventOutbox()
            return counts
        }
        self.logger.debug(
            "state pruned",
            metadata: [
                "replay": "\(counts.replay)", "calls": "\(counts.finishedCalls)",
                "earlyCancels": "\(counts.earlyCancels)", "decisions": "\(counts.decisions)",
                "events": "\(counts.events)",
            ]
        )
        return counts
    }

    // MARK: - post-commit actions

    enum PostCommit: Sendable {
        case handOff(FilterDecision.Handoff)
        case end(account: String, callID: UUID, cause: CallEndCause, atMs: Int64)
        case refused(FilterDecision.Handoff, FilterError.Code, atMs: Int64)
        case remoteDeclined(RemoteDeclineRecord)
    }

    /// Hands `remote-declined` events to the reporter (the event outbox records each once), then forgets them.
    func reportRemoteDeclines(_ declines: [RemoteDeclineRecord]) async throws {
        guard !declines.isEmpty else { return }
        for decline in declines {
            await self.reporter.reportRemoteDeclined(
                account: decline.account,
                callID: decline.callID,
                byUser: decline.byUser,
                byDevice: decline.byDevice,
                atMs: decline.atMs
            )
        }
        try self.store.transaction { tx in try tx.deleteRemoteDeclines(declines) }
    }

    private func perform(_ actions: [PostCommit]) async {
        // An answer or decline committed by `e2ee-filter answer|decline` before this batch reaches the provider
        // first: a remoteEnded cancel of an answered call then ends it as `ended`, not `missed`.
        if !actions.isEmpty {
            do {
                try await self.applyCallActions()
            } catch {
                self.logger.error("answer/decline actions could not be read", metadata: ["error": "\(error)"])
            }
        }
        var declines: [RemoteDeclineRecord] = []
        // The batch's events are committed together after its last report (one commit, not one per event).
        self.reporter.beginEventBatch()
        for action in actions {
            switch action {
            case .handOff(let handoff): await self.reporter.handOff(handoff)
            case .end(let account, let callID, let cause, let atMs):
                await self.reporter.endCall(account: account, callID: callID, cause: cause, atMs: atMs)
            case .refused(let handoff, let refusal, let atMs):
                await self.reporter.reportRefused(handoff, refusal: refusal, atMs: atMs)
            case .remoteDeclined(let decline):
                declines.append(decline)
            }
        }
        self.reporter.endEventBatch()
        do {
            try await self.reportRemoteDeclines(declines)
        } catch {
            // Kept in the state: the next start reports them again (the outbox drops what it has).
            self.logger.error("remote-declined events could not be settled", metadata: ["error": "\(error)"])
        }
    }
}
