import E2EECore
import PushTransport

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension FilterEngine {
    /// A message that opened and verified, with what the rules need to know about its account and sender.
    struct OpenedMessage: Sendable {
        var account: String
        var message: InnerMessage
        var senderName: String
        /// The sending device's id in the sender's device list.
        var senderDevice: String?
        /// The receiving account's user id and this device's signing key id (§15.1: who counts as "another
        /// device of the same user").
        var ownUserID: String
        var ownSigningKeyID: KeyID?

        /// The message comes from this very device (its own message to its own user, come back).
        var isOwnEcho: Bool {
            self.message.senderUserID == self.ownUserID && self.ownSigningKeyID == self.message.senderSigningKeyID
        }

        /// The message comes from ANOTHER device of the receiving account's own user.
        var fromOwnOtherDevice: Bool {
            self.message.senderUserID == self.ownUserID
                && self.ownSigningKeyID.map { $0 != self.message.senderSigningKeyID } ?? false
        }
    }

    /// The stateless half of a decision: parse, find the account, open and verify.
    enum Opened: Sendable {
        case malformedInput
        case failed(code: E2EEError.Code, account: String?)
        case opened(OpenedMessage)
    }

    /// What opening needs, copied out of the actor so batches can be opened on both cores, and ahead of the
    /// batch before them (``open(_:)``).
    struct OpenContext: Sendable {
        /// The push service whose bodies are unframed.
        var transport: any PushTransport.Type
        var accounts: [FilterAccount]
        var accountByKeyID: [KeyID: Int]
        /// Counts the changes of `accounts` (an unlock): a batch opened with an older context is opened again.
        var generation = 0

        var isLocked: Bool { self.accounts.contains(where: \.isLocked) }
    }

    /// Opens a batch: inputs of eight or more are split in two halves opened in parallel (decryption and signature
    /// checks are the expensive, stateless part of a decision).
    static func openAll(_ inputs: [PayloadInput], _ context: OpenContext, nowMs: Int64) async -> [Opened] {
        guard inputs.count >= 8 else { return inputs.map { Self.open($0, context, nowMs: nowMs) } }
        let half = inputs.count / 2
        let second = Array(inputs[half...])
        let other = Task.detached { second.map { Self.open($0, context, nowMs: nowMs) } }
        let first = inputs[..<half].map { Self.open($0, context, nowMs: nowMs) }
        return first + (await other.value)
    }

    /// Opens one payload. The recipient key must be one of the account's keys that still opens at `nowMs`: the
    /// identity's per-key `expires_at_ms` decides (docs/PROTOCOL.md §11.1; a revoked key opens nothing).
    static func open(_ input: PayloadInput, _ context: OpenContext, nowMs: Int64) -> Opened {
        guard let body = input.body else { return .malformedInput }
        do {
            let envelope = try context.transport.envelope(fromBody: body)
            guard let index = context.accountByKeyID[envelope.recipientKeyID],
                let identity = context.accounts[index].identity
            else {
                return .failed(code: .unknownRecipientKey, account: nil)
            }
            let account = context.accounts[index]
            do {
                let opened = try PushPayload.open(
                    envelope,
                    deviceKey: { identity.deviceKey(for: $0, nowMs: UInt64(max(0, nowMs))) },
                    signingKey: { account.contacts.signingKey(userID: $0, keyID: $1) }
                )
                let message = opened.message
                let list = account.contacts.lists[message.senderUserID]
                return .opened(
                    OpenedMessage(
                        account: account.name,
                        message: message,
                        senderName: list?.displayName ?? message.senderUserID,
                        senderDevice: list?.device(signingKeyID: message.senderSigningKeyID)?.deviceID,
                        ownUserID: account.userID,
                        ownSigningKeyID: account.ownSigningKeyID
                    )
                )
            } catch {
                return .failed(code: error.code, account: account.name)
            }
        } catch {
            return .failed(code: error.code, account: nil)
        }
    }

    /// The stateful half: replay, clock and call rules. Runs inside the batch's transaction.
    func decide(
        _ input: PayloadInput,
        _ result: Opened,
        nowMs: Int64,
        tx: borrowing FilterStateTransaction,
        admission: inout CallAdmission,
        actions: inout [PostCommit]
    ) throws -> FilterDecision {
        func make(_ action: FilterDecision.Action, _ reason: FilterReason) -> FilterDecision {
            FilterDecision(seq: input.seq, apnsID: input.apnsID, decision: action, reason: reason)
        }
        func fallback(_ reason: FilterReason) -> FilterDecision {
            var d = make(.fallback, reason)
            d.alert = FilterDecision.fallbackAlert
            return d
        }

        let opened: OpenedMessage
        switch result {
        case .malformedInput:
            return fallback(FilterReason.malformedInput)
        case .failed(let code, let acct):
            var d: FilterDecision
            if code == .unknownSender && self.policy.unknownSender == .silence {
                d = make(.silence, FilterReason.unknownSender)
            } else {
                // Every code of opening is also a reason, spelled as the protocol spells it.
                d = fallback(.opening(code))
            }
            d.account = acct
            return d
        case .opened(let o):
            opened = o
        }
        var basis = DecisionBasis(
            decision: FilterDecision(seq: input.seq, apnsID: input.apnsID, decision: .silence, reason: .undecided),
            opened: opened,
            nowMs: nowMs,
            sentAt: Int64(clamping: opened.message.sentAtMs)
        )
        basis.decision.kind = opened.message.kind.description
        basis.decision.account = opened.account
        basis.decision.messageID = opened.message.messageID.hex
        basis.decision.senderDevice = opened.senderDevice
        let message = opened.message
        let sentAt = basis.sentAt

        // This device's own message to its own user: silenced before every other rule (no alert, no ring, no
        // fallback for its clock, never a cancel of anything).
        if opened.isOwnEcho { return basis.finish(.silence, FilterReason.ownEcho) }
        // Clock: a send time too far ahead is refused; one older than the replay window cannot be replay-checked.
        if sentAt > nowMs + self.policy.clockSkewMs { return basis.finish(.fallback, FilterReason.clock) }
        if sentAt < nowMs - self.policy.replayRetentionMs { return basis.finish(.fallback, FilterReason.stale) }
        // Replay: the same sender's message id within the retention window (ids are per sender: PROTOCOL.md §9).
        guard
            try tx.insertMessageID(
                account: opened.account,
                sender: message.senderUserID,
                messageID: message.messageID.bytes,
                sentAtMs: sentAt
            )
        else {
            return basis.finish(.silence, FilterReason.replay)
        }

        // One rule per kind.
        switch message.content {
        case .text(let text):
            return Self.decideText(text, basis)
        case .receipt:
            return basis.finish(.silence, FilterReason.receipt)
        case .unknown:
            return basis.finish(.silence, FilterReason.unknownKind)
        case .callInvite(let invite):
            basis.decision.callID = invite.callID
            return try self.decideInvite(invite, basis, tx: tx, admission: &admission, actions: &actions)
        case .callCancel(let cancel):
            basis.decision.callID = cancel.callID
            return try self.decideCancel(cancel, basis, tx: tx, admission: &admission, actions: &actions)
        }
    }

    /// A text: shown, titled with the sender's name.
    static func decideText(_ text: TextMessage, _ basis: DecisionBasis) -> FilterDecision {
        var d = basis.finish(.alert, FilterReason.text)
        d.alert = FilterDecision.Alert(
            title: basis.opened.senderName,
            subtitle: text.title.isEmpty ? nil : text.title,
            body: text.body,
            threadID: text.threadID.isEmpty ? nil : text.threadID
        )
        return d
    }

    /// A call invite: rings (handed to the call provider), or is a missed call, or is silenced as a duplicate.
    func decideInvite(
        _ invite: CallInvite,
        _ basis: DecisionBasis,
        tx: borrowing FilterStateTransaction,
        admission: inout CallAdmission,
        actions: inout [PostCommit]
    ) throws -> FilterDecision {
        let (account, message, opened, nowMs) = (basis.account, basis.message, basis.opened, basis.nowMs)
        let sentAt = basis.sentAt
        let missedAlert = FilterDecision.Alert(
            title: "Missed call",
            subtitle: nil,
            body: "\(invite.displayName.isEmpty ? invite.callerHandle : invite.displayName) called you"
                + (invite.hasVideo ? " (video)" : ""),
            threadID: nil
        )
        func missed(_ reason: FilterReason) throws -> FilterDecision {
            try tx.setCallState(
                CallStateRecord(
                    account: account,
                    callID: invite.callID,
                    state: .missed,
                    updatedAtMs: nowMs,
                    endReason: .decision(reason),
                    callerUserID: message.senderUserID
                )
            )
            _ = try tx.recordMissedCall(
                MissedCallRecord(
                    account: account,
                    callID: invite.callID,
                    callerHandle: invite.callerHandle,
                    displayName: invite.displayName,
                    atMs: nowMs,
                    reason: .decision(reason)
                )
            )
            var d = basis.finish(.missedCall, reason)
            d.alert = missedAlert
            return d
        }
        if try tx.callState(account: account, callID: invite.callID) != nil {
            // Already ringing, active, ended or missed: never a second ring (docs/FAILURE-MODES.md item 7).
            return basis.finish(.silence, FilterReason.duplicateCall)
        }
        // Only a cancel from the inviter cancels the invite; an answer or decline on another device of the
        // account's own user that came first keeps it from ringing without a missed call (§15.1). Cancels
        // from anyone else are dropped here.
        let early = try tx.consumeEarlyCancels(account: account, callID: invite.callID)
        if early.contains(where: { $0.senderUserID == nil || $0.senderUserID == message.senderUserID }) {
            return try missed(FilterReason.cancelledBeforeInvite)
        }
        if let elsewhere = early.first(where: {
            $0.senderUserID == opened.ownUserID && $0.reason.cancelReason.flatMap(Self.elsewhereReason) != nil
        }), let reason = elsewhere.reason.cancelReason.flatMap(Self.elsewhereReason) {
            try tx.setCallState(
                CallStateRecord(
                    account: account,
                    callID: invite.callID,
                    state: .ended,
                    updatedAtMs: nowMs,
                    endReason: .decision(reason),
                    callerUserID: message.senderUserID
                )
            )
            return basis.finish(.silence, reason)
        }
        let deadline = sentAt + Int64(invite.ringTimeoutSeconds) * 1000 + self.policy.clockSkewMs
        if nowMs >= deadline {
            return try missed(FilterReason.inviteExpired)
        }
        let handoff = FilterDecision.Handoff(
            callID: invite.callID,
            callerHandle: invite.callerHandle,
            displayName: invite.displayName,
            hasVideo: invite.hasVideo,
            account: account,
            ringDeadlineMs: deadline,
            groupParticipants: invite.groupParticipants.isEmpty ? nil : invite.groupParticipants
        )
        // The provider's answer decides: a refused call never rings, so it is a missed call (with the refusal
        // as its reason and a `missed` event), and its state is final: a later cancel or retry finds it ended.
        if let refusal = admission.admit(handoff) {
            guard let reason = FilterReason.callRefused(refusal) else {
                return basis.finish(.silence, FilterReason.duplicateCall)  // the provider knows this call id already
            }
            actions.append(.refused(handoff, refusal, atMs: nowMs))
            return try missed(reason)
        }
        try tx.setCallState(
            CallStateRecord(
                account: account,
                callID: invite.callID,
                state: .ringing,
                updatedAtMs: nowMs,
                callerUserID: message.senderUserID
            )
        )
        try tx.setRing(
            RingRecord(
                account: account,
                callID: invite.callID,
                deadlineMs: deadline,
                callerHandle: invite.callerHandle,
                displayName: invite.displayName,
                hasVideo: invite.hasVideo
            )
        )
        actions.append(.handOff(handoff))
        var d = basis.finish(.ring, FilterReason.freshInvite)
        d.handoff = handoff
        return d
    }

    /// A call cancel: ends a ringing or active call when it comes from the caller (or, answered or declined,
    /// from another device of this user), or is remembered for an invite still to come.
    func decideCancel(
        _ cancel: CallCancel,
        _ basis: DecisionBasis,
        tx: borrowing FilterStateTransaction,
        admission: inout CallAdmission,
        actions: inout [PostCommit]
    ) throws -> FilterDecision {
        let (account, message, opened, nowMs) = (basis.account, basis.message, basis.opened, basis.nowMs)
        // §15.1: another device of the account's own user answered or declined.
        let elsewhere =
            opened.fromOwnOtherDevice
            && (cancel.reason == .answeredElsewhere || cancel.reason == .declinedElsewhere)
        guard let state = try tx.callState(account: account, callID: cancel.callID) else {
            if message.senderUserID == opened.ownUserID && !opened.fromOwnOtherDevice {
                // This device's own cancel coming back: it changes nothing.
                return basis.finish(.silence, FilterReason.cancelNotFromCaller)
            }
            // Pushes are not ordered: remember it, so the late invite becomes a missed call (docs/FAILURE-MODES.md
            // item 5), or, answered or declined on another device of this user, never rings.
            try tx.recordEarlyCancel(
                EarlyCancelRecord(
                    account: account,
                    callID: cancel.callID,
                    reason: CallEndedReason(cancel.reason),
                    atMs: nowMs,
                    senderUserID: message.senderUserID
                )
            )
            if cancel.reason == .declinedElsewhere && message.senderUserID != opened.ownUserID {
                // The caller's side: a callee declined a call this user placed (not an incoming call here). Its
                // `remote-declined` event is kept with the decision until it is recorded in the event outbox,
                // so a crash in between cannot lose it (``FilterEngine/recoverAfterRestart()``).
                let decline = RemoteDeclineRecord(
                    account: account,
                    callID: cancel.callID,
                    byUser: message.senderUserID,
                    byDevice: opened.senderDevice,
                    atMs: nowMs
                )
                try tx.insertRemoteDecline(decline)
                actions.append(.remoteDeclined(decline))
                return basis.finish(.silence, FilterReason.declinedByCallee)
            }
            return basis.finish(.silence, FilterReason.cancelForUnknownCall)
        }
        // Only the user who invited can end the call, or (answered or declined) another device of the account's
        // own user; anyone else who knows the call id cannot (a call stored before the caller was recorded has
        // no caller and accepts any contact's cancel, as it did then).
        let fromCaller = state.callerUserID == nil || state.callerUserID == message.senderUserID
        guard fromCaller || elsewhere else {
            return basis.finish(.silence, FilterReason.cancelNotFromCaller)
        }
        if elsewhere && !fromCaller && state.state == .active {
            // Answered here too: the call goes on on this device.
            return basis.finish(.silence, FilterReason.cancelForAnsweredCall)
        }
        guard state.state == .ringing || state.state == .active else {
            return basis.finish(.silence, FilterReason.cancelForEndedCall)
        }
        let wasRinging = state.state == .ringing
        let endedRing = try tx.deleteRing(account: account, callID: cancel.callID)
        admission.end(uuid: cancel.callID)
        let ring = wasRinging && cancel.reason == .remoteEnded
        try tx.setCallState(
            CallStateRecord(
                account: account,
                callID: cancel.callID,
                state: ring ? .missed : .ended,
                updatedAtMs: nowMs,
                endReason: .ended(CallEndedReason(cancel.reason))
            )
        )
        if ring {
            // The caller hung up before anyone answered: a missed call in the log (not a second alert).
            _ = try tx.recordMissedCall(
                MissedCallRecord(
                    account: account,
                    callID: cancel.callID,
                    callerHandle: endedRing?.callerHandle,
                    displayName: endedRing?.displayName,
                    atMs: nowMs,
                    reason: .ended(.remoteEnded)
                )
            )
        }
        actions.append(.end(account: account, callID: cancel.callID, cause: .cancelled(cancel.reason), atMs: nowMs))
        if elsewhere && !fromCaller {
            return basis.finish(.silence, Self.elsewhereReason(cancel.reason) ?? .callCancelled)
        }
        return basis.finish(.silence, FilterReason.callCancelled)
    }

    /// What every per-kind rule starts from: the opened message and the decision filled in so far.
    struct DecisionBasis {
        var decision: FilterDecision
        let opened: OpenedMessage
        let nowMs: Int64
        /// The message's send time, clamped to `Int64`.
        let sentAt: Int64

        var account: String { self.opened.account }
        var message: InnerMessage { self.opened.message }

        /// The decision with its action and reason (and the fallback alert for `fallback`).
        func finish(_ action: FilterDecision.Action, _ reason: FilterReason) -> FilterDecision {
            var d = self.decision
            d.decision = action
            d.reason = reason
            if action == .fallback { d.alert = FilterDecision.fallbackAlert }
            return d
        }
    }

    /// The decision reason of an `answeredElsewhere` / `declinedElsewhere` cancel reason (nil for any other).
    static func elsewhereReason(_ cancelReason: CallCancelReason) -> FilterReason? {
        switch cancelReason {
        case .answeredElsewhere: .answeredElsewhere
        case .declinedElsewhere: .declinedElsewhere
        case .remoteEnded: nil
        }
    }
}
