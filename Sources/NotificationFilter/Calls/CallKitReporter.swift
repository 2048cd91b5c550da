public import E2EECore
public import Logging

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The engine's call reporting, wired as on iOS: filter → ``CallReporter`` (`reportNewIncomingVoIPPushPayload`)
/// → ``CallProvider`` (CallKit's model), whose events go to the sink (the durable ``EventOutbox``).
public final class CallKitReporter: CallReporting, Sendable {
    public let provider: CallProvider
    public let reporter: CallReporter
    let sink: any CallEventSink
    let clock: WallClock
    let logger: Logger

    public init(
        configuration: CallProviderConfiguration,
        sink: any CallEventSink,
        clock: WallClock,
        logger: Logger
    ) {
        self.clock = clock
        self.sink = sink
        self.logger = logger
        self.provider = CallProvider(
            configuration: configuration,
            sinks: [sink],
            logger: logger,
            clock: clock
        )
        self.reporter = CallReporter(provider: self.provider, logger: logger)
    }

    public func handOff(_ handoff: FilterDecision.Handoff) async {
        let remaining = max(0, TimeInterval(milliseconds: handoff.ringDeadlineMs - self.clock.nowMs))
        await self.reporter.reportNewIncomingVoIPPushPayload(
            IncomingCallPayload(
                callID: handoff.callID,
                update: CallUpdate(handoff: handoff),
                ringTimeoutSeconds: remaining
            )
        )
    }

    public func admission() async -> CallAdmission {
        await self.provider.admission
    }

    public func reportRefused(_ handoff: FilterDecision.Handoff, refusal: FilterError.Code, atMs: Int64) async {
        await self.provider.reportRefusedCall(
            uuid: handoff.callID,
            update: CallUpdate(handoff: handoff),
            refusal: refusal,
            at: Date(milliseconds: atMs)
        )
    }

    public func endCall(account: String, callID: UUID, cause: CallEndCause, atMs: Int64) async {
        let reason: CallEndedReason =
            switch cause {
            case .unanswered: .unanswered
            case .cancelled(let cancel): CallEndedReason(cancel)
            }
        _ = atMs  // the provider stamps the end with its own clock, after the ring it reported
        await self.provider.reportCall(uuid: callID, endedAt: nil, reason: reason)
    }

    /// Re-reports a call that was ringing before a restart. The provider emits `ringing` again, and the event
    /// outbox's unique key drops it: the call rings on, the events file shows one `ringing`.
    public func restoreRinging(_ handoff: FilterDecision.Handoff) async {
        await self.handOff(handoff)
    }

    public func apply(_ action: CallUserAction, _ handoff: FilterDecision.Handoff) async {
        if await self.provider.call(handoff.callID) == nil {
            await self.handOff(handoff)  // restored: its `ringing` event is a duplicate the outbox drops
        }
        do {
            switch action {
            case .answer: try await self.provider.answer(handoff.callID)
            case .decline: try await self.provider.decline(handoff.callID)
            }
        } catch {
            // Applied before (a second apply after a restart): the provider's state already says so.
            self.logger.debug(
                "call action already applied",
                metadata: ["callID": "\(handoff.callID)", "action": "\(action)", "code": "\(error.code)"]
            )
        }
    }

    public func reportRemoteDeclined(
        account: String,
        callID: UUID,
        byUser: String,
        byDevice: String?,
        atMs: Int64
    ) async {
        self.sink.emit(
            CallEvent(
                event: .remoteDeclined,
                callID: callID,
                account: account,
                byUser: byUser,
                byDevice: byDevice,
                atMs: atMs
            )
        )
    }

    public func beginEventBatch() {
        self.sink.beginBatch()
    }

    public func endEventBatch() {
        self.sink.endBatch()
    }

    /// Handoffs that completed without a call report: iOS would terminate the app. Always zero.
    public var violations: Int {
        get async { await self.reporter.counters.violations }
    }
}

extension CallUpdate {
    /// What the provider shows for a handed-off call.
    init(handoff: FilterDecision.Handoff) {
        self.init(
            remoteHandle: CallHandle(type: .generic, value: handoff.callerHandle),
            localizedCallerName: handoff.displayName.isEmpty ? nil : handoff.displayName,
            hasVideo: handoff.hasVideo,
            account: handoff.account,
            groupParticipants: handoff.groupParticipants ?? []
        )
    }
}

extension CallAdmission {
    /// Whether the provider would refuse this handoff (nil: it rings, and counts as live for the next one).
    mutating func admit(_ handoff: FilterDecision.Handoff) -> FilterError.Code? {
        self.admit(uuid: handoff.callID, update: CallUpdate(handoff: handoff))?.code
    }
}
