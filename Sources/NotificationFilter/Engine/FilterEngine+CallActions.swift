import E2EECore

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What ``FilterEngine/perform(_:callID:account:)`` did: the committed action and the cancels this device must now
/// send (docs/PROTOCOL.md §15.1), as `e2ee-send batch` request lines.
public struct CallActionOutcome: Sendable, Hashable {
    public var account: String
    public var callID: UUID
    public var action: CallUserAction
    /// One `e2ee-send batch` line per cancel to send, e.g.
    /// `{"call_id":"<UUID>","kind":"cancel","reason":"answeredElsewhere","to":"bob"}`.
    public var requestLines: [String]
}

/// One answer or decline recorded in the state, with what the provider needs to show the call.
struct CallActionRecord: Sendable, Hashable {
    var id: Int64
    var account: String
    var action: CallUserAction
    var handoff: FilterDecision.Handoff
    /// The call's state now (answered: `active` until it ends).
    var callState: StoredCallState?
    var applied: Bool

    /// The engine's view of a stored row; `nil` for an action this build does not know.
    init?(_ row: CallActionRow) {
        guard let action = CallUserAction(rawValue: row.action) else { return nil }
        self.id = row.id
        self.account = row.account
        self.action = action
        self.handoff = FilterDecision.Handoff(
            callID: row.callID,
            callerHandle: row.callerHandle,
            displayName: row.displayName,
            hasVideo: row.hasVideo,
            account: row.account,
            ringDeadlineMs: row.deadlineMs
        )
        self.callState = row.callState
        self.applied = row.applied
    }
}

extension FilterEngine {
    /// The user answers or declines a ringing call (CallKit's `CXAnswerCallAction` / `CXEndCallAction`).
    ///
    /// In one state transaction, with the same rules as decisions: the call must be ringing for the account; it
    /// becomes `active` (answer) or `ended` with reason `declined` (decline; never a missed call), its ring
    /// deadline is dropped, and the action is queued for the provider. A running `e2ee-filter run` on the same
    /// state file applies queued actions within a tick (``applyCallActions()``), emitting `answered` or
    /// `declined`; without one, the next run applies them at start. Neither creates a missed call.
    ///
    /// - Parameters:
    ///   - action: answer or decline.
    ///   - callID: the call.
    ///   - account: the account's name; may be left out when the filter serves one account.
    /// - Returns: the cancels to send: on answer `answeredElsewhere` to the account's own user (every device of
    ///   it, this one included, which silences its echo: `own-echo`), on decline `declinedElsewhere` to the own user
    ///   and to the inviter.
    /// - Throws: ``FilterError`` `unknownAccount`, `unknownCallUUID` (no such call here), `invalidAction` (the
    ///   call is not ringing: already answered, declined, ended or missed); ``FilterError`` for the state.
    public func perform(
        _ action: CallUserAction,
        callID: UUID,
        account name: String? = nil
    ) throws
        -> CallActionOutcome
    {
        let account: FilterAccount
        if let name {
            guard let found = self.accounts.first(where: { $0.name == name }) else {
                throw FilterError(
                    code: .unknownAccount,
                    message: "no account is named \"\(name)\" (accounts: \(self.accountNames))"
                )
            }
            account = found
        } else {
            guard self.accounts.count == 1 else {
                throw FilterError(
                    code: .unknownAccount,
                    message:
                        "this filter serves \(self.accounts.count) accounts (\(self.accountNames)): pass --account NAME"
                )
            }
            account = self.accounts[0]
        }
        let nowMs = self.clock.nowMs
        let caller = try self.store.transaction { tx -> String? in
            guard let state = try tx.callState(account: account.name, callID: callID) else {
                throw FilterError(
                    code: .unknownCallUUID,
                    message: "account \(account.name) knows no call \(callID.uuidText): it never rang on this "
                        + "device (check the call id in the decisions or call events), or it was pruned"
                )
            }
            guard state.state == .ringing else {
                throw FilterError(
                    code: .invalidAction,
                    message: "call \(callID.uuidText) is \(state.state)"
                        + (state.endReason.map { " (\($0))" } ?? "")
                        + ", not ringing: only a ringing call can be answered or declined"
                )
            }
            let ring = try tx.deleteRing(account: account.name, callID: callID)
            try tx.setCallState(
                CallStateRecord(
                    account: account.name,
                    callID: callID,
                    state: action == .answer ? .active : .ended,
                    updatedAtMs: nowMs,
                    endReason: action == .answer ? nil : .ended(.declined)
                )
            )
            try tx.insertCallAction(
                CallActionRow(
                    account: account.name,
                    callID: callID,
                    action: action.rawValue,
                    atMs: nowMs,
                    deadlineMs: ring?.deadlineMs ?? nowMs,
                    callerHandle: ring?.callerHandle ?? state.callerUserID ?? "unknown",
                    displayName: ring?.displayName ?? "",
                    hasVideo: ring?.hasVideo ?? false
                )
            )
            return state.callerUserID
        }
        self.logger.info("call action recorded", metadata: ["callID": "\(callID)", "action": "\(action)"])
        var recipients = [account.userID]
        if action == .decline, let caller, caller != account.userID { recipients.append(caller) }
        let reason: CallCancelReason = action == .answer ? .answeredElsewhere : .declinedElsewhere
        return CallActionOutcome(
            account: account.name,
            callID: callID,
            action: action,
            requestLines: recipients.map { CancelRequestLine(to: $0, callID: callID, reason: reason).jsonLine() }
        )
    }

    /// Hands answers and declines recorded in the state (by ``perform(_:callID:account:)``, possibly in another
    /// process) to the call provider, once each, in the order they were recorded.
    ///
    /// - Returns: how many were applied.
    @discardableResult
    public func applyCallActions() async throws -> Int {
        let pending = try self.store.transaction { tx in
            try tx.callActions(answeredOnly: false, pendingOnly: true).compactMap(CallActionRecord.init)
        }
        guard !pending.isEmpty else { return 0 }
        for action in pending {
            await self.reporter.apply(action.action, action.handoff)
        }
        try self.store.transaction { tx in try tx.markCallActionsApplied(pending.map(\.id)) }
        return pending.count
    }

    private var accountNames: String { self.accounts.map(\.name).joined(separator: ", ") }
}

/// A cancel as an `e2ee-send batch` request line (Sender's `SendRequest`: `kind`, `to`, `call_id`, `reason`).
struct CancelRequestLine: Encodable {
    var kind = "cancel"
    var to: String
    var callID: String
    var reason: CallCancelReason

    init(to: String, callID: UUID, reason: CallCancelReason) {
        self.to = to
        self.callID = callID.uuidText
        self.reason = reason
    }

    /// The reason is written by its name (`answeredElsewhere`), as `e2ee-send batch` reads it.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.kind, forKey: .kind)
        try container.encode(self.to, forKey: .to)
        try container.encode(self.callID, forKey: .callID)
        try container.encode(self.reason.description, forKey: .reason)
    }

    enum CodingKeys: String, CodingKey {
        case kind, to, reason
        case callID = "call_id"
    }

    func jsonLine() -> String {
        JSONLine.encode(self)
    }
}
