public import E2EECore
public import Logging

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The call-reporting component, modelled on CallKit's `CXProvider` contract.
///
/// Incoming calls are reported with ``reportNewIncomingCall(uuid:update:ringTimeoutSeconds:)``,
/// which either shows the call (it rings, a `ringing` event is emitted) or refuses it with a
/// CallKit-like ``FilterError``. The app ends calls with ``reportCall(uuid:endedAt:reason:)``;
/// the user acts with ``answer(_:)``, ``decline(_:)`` and ``end(_:)``. A ringing call has a deadline
/// and ``expireRinging(now:)`` ends overdue calls as unanswered with a `missed` event.
///
/// Every state change emits exactly one event, synchronously and without suspending, so two
/// concurrent reports of the same call id can never both ring. A ringing call that ends without
/// being answered because nobody picked up or the caller hung up (`unanswered`, `remoteEnded`)
/// emits `missed`; every other end emits `ended` (or `declined` for the user's decline).
public actor CallProvider {
    private struct LiveCall {
        var update: CallUpdate
        var state: CallSnapshot.State
        var ringDeadline: Date?
    }

    private var configuration: CallProviderConfiguration
    private let sinks: [any CallEventSink]
    private let logger: Logger
    private let clock: WallClock
    private var calls: [UUID: LiveCall] = [:]
    /// The keys of `calls`, kept beside it so ``admission`` shares a set instead of building one per batch.
    private var liveIDs: Set<UUID> = []
    private var endedOrder: [UUID] = []
    private var endedIDs: Set<UUID> = []

    /// Creates a provider.
    ///
    /// - Parameters:
    ///   - configuration: Limits, supported features and filters.
    ///   - sinks: Where call events go, in order.
    ///   - logger: Where decisions are logged (call ids and codes only; never handles or names).
    ///   - clock: The clock, injected so ring timeouts are tested without sleeping.
    public init(
        configuration: CallProviderConfiguration = CallProviderConfiguration(),
        sinks: [any CallEventSink],
        logger: Logger,
        clock: WallClock = .system
    ) {
        self.configuration = configuration
        self.sinks = sinks
        self.logger = logger
        self.clock = clock
    }

    /// Replaces the configuration (for example to switch do-not-disturb); live calls are kept.
    public func updateConfiguration(_ configuration: CallProviderConfiguration) {
        self.configuration = configuration
    }

    /// Reports a new incoming call, which rings unless the provider refuses it.
    ///
    /// Checks, in order: the id is not live or recently ended; the handle type is supported; the
    /// handle is not blocked; do-not-disturb is off; fewer than `maximumCallGroups` calls are live.
    /// A video call on a provider without video support rings as an audio call rather than being
    /// refused, so a call is never lost for a feature.
    ///
    /// - Parameters:
    ///   - uuid: The call id (the same id across retries and devices).
    ///   - update: Who calls and how to show it.
    ///   - ringTimeoutSeconds: How long to ring; nil uses the configuration's default.
    /// - Throws: ``FilterError`` with `callUUIDAlreadyExists`, `unentitled`,
    ///   `filteredByBlockList`, `filteredByDoNotDisturb` or `maximumCallsReached`.
    public func reportNewIncomingCall(
        uuid: UUID,
        update: CallUpdate,
        ringTimeoutSeconds: Double? = nil
    ) throws(FilterError) {
        if let refusal = admission.refusal(uuid: uuid, update: update) {
            throw refuse(uuid, refusal)
        }
        var shown = update
        if shown.hasVideo && !configuration.supportsVideo {
            shown.hasVideo = false
            logger.info("video call rings as audio: video not supported", metadata: ["callID": "\(uuid)"])
        }
        let reportedAt = self.clock.date
        let timeout = max(0, ringTimeoutSeconds ?? configuration.defaultRingTimeoutSeconds)
        calls[uuid] = LiveCall(update: shown, state: .ringing, ringDeadline: reportedAt.addingTimeInterval(timeout))
        liveIDs.insert(uuid)
        logger.info("call ringing", metadata: ["callID": "\(uuid)", "ringTimeoutSeconds": "\(timeout)"])
        emit(.ringing, uuid, shown, reason: nil, at: reportedAt)
    }

    /// The rules ``reportNewIncomingCall(uuid:update:ringTimeoutSeconds:)`` applies, with the calls live now: a
    /// copy, so a caller can learn whether a call would ring before reporting it.
    public var admission: CallAdmission {
        CallAdmission(configuration: configuration, liveIDs: liveIDs, endedIDs: endedIDs)
    }

    /// Records an incoming call that was refused (the ``admission`` said so) as missed: a `missed` event whose
    /// reason is the refusal code, and the id is remembered as ended (a later report of it is a duplicate).
    ///
    /// - Parameters:
    ///   - uuid: The call id.
    ///   - update: Who called.
    ///   - refusal: Why the call did not ring.
    ///   - date: When it was refused; nil means now.
    public func reportRefusedCall(uuid: UUID, update: CallUpdate, refusal: FilterError.Code, at date: Date? = nil) {
        guard calls[uuid] == nil else { return }
        remember(uuid)
        logger.info("refused call missed", metadata: ["callID": "\(uuid)", "code": "\(refusal)"])
        emit(.missed, uuid, update, reason: .refused(refusal), at: date ?? self.clock.date)
    }

    /// Restores a call that was ringing before the process restarted, without a second `ringing` event.
    ///
    /// The call keeps its original deadline; if that has passed, the next ``expireRinging(now:)`` ends it
    /// as missed. Not counted against the limits or filters: the call was accepted before the restart.
    ///
    /// - Parameters:
    ///   - uuid: The call id.
    ///   - update: Who calls.
    ///   - ringDeadline: When the call stops ringing as unanswered.
    /// - Returns: False if a live call with this id exists already (nothing changes).
    @discardableResult
    public func restoreRingingCall(uuid: UUID, update: CallUpdate, ringDeadline: Date) -> Bool {
        guard calls[uuid] == nil else { return false }
        var shown = update
        if !configuration.supportsVideo { shown.hasVideo = false }
        calls[uuid] = LiveCall(update: shown, state: .ringing, ringDeadline: ringDeadline)
        liveIDs.insert(uuid)
        logger.info("ringing call restored", metadata: ["callID": "\(uuid)"])
        return true
    }

    /// Reports that a call ended for a reason outside the user's actions (CallKit's `reportCall(with:endedAt:reason:)`).
    ///
    /// - Parameters:
    ///   - uuid: The call id.
    ///   - endedAt: When it ended; nil means now.
    ///   - reason: Why it ended.
    /// - Returns: Whether a live call was ended (false for an unknown or already ended id, which is ignored).
    @discardableResult
    public func reportCall(uuid: UUID, endedAt: Date? = nil, reason: CallEndedReason) -> Bool {
        guard let call = calls[uuid] else {
            logger.debug("end of an unknown call ignored", metadata: ["callID": "\(uuid)", "reason": "\(reason)"])
            return false
        }
        let missed = call.state == .ringing && (reason == .unanswered || reason == .remoteEnded)
        finish(uuid, call, event: missed ? .missed : .ended, reason: reason, at: endedAt ?? self.clock.date)
        return true
    }

    /// The user answers a ringing call.
    ///
    /// - Throws: ``FilterError`` `unknownCallUUID` for no live call, `invalidAction` if already answered.
    public func answer(_ uuid: UUID) throws(FilterError) {
        guard var call = calls[uuid] else { throw unknown(uuid) }
        guard call.state == .ringing else {
            throw FilterError(
                code: .invalidAction,
                message: "call \(uuid) is \(call.state), only a ringing call can be answered"
            )
        }
        call.state = .active
        call.ringDeadline = nil
        calls[uuid] = call
        logger.info("call answered", metadata: ["callID": "\(uuid)"])
        emit(.answered, uuid, call.update, reason: nil, at: self.clock.date)
    }

    /// The user declines a ringing call.
    ///
    /// - Throws: ``FilterError`` `unknownCallUUID` for no live call, `invalidAction` for an answered call (use ``end(_:)``).
    public func decline(_ uuid: UUID) throws(FilterError) {
        guard let call = calls[uuid] else { throw unknown(uuid) }
        guard call.state == .ringing else {
            throw FilterError(
                code: .invalidAction,
                message: "call \(uuid) is \(call.state); end it instead of declining"
            )
        }
        finish(uuid, call, event: .declined, reason: .declined, at: self.clock.date)
    }

    /// The user ends a call: an answered call ends as `localEnded`, a ringing one is declined.
    ///
    /// - Throws: ``FilterError`` `unknownCallUUID` for no live call.
    public func end(_ uuid: UUID) throws(FilterError) {
        guard let call = calls[uuid] else { throw unknown(uuid) }
        if call.state == .ringing {
            finish(uuid, call, event: .declined, reason: .declined, at: self.clock.date)
        } else {
            finish(uuid, call, event: .ended, reason: .localEnded, at: self.clock.date)
        }
    }

    /// Ends every ringing call whose deadline has passed as `unanswered`, emitting `missed` for each.
    ///
    /// - Parameter now: The current time (from the daemon's timer or a test clock).
    /// - Returns: The ids of the calls that stopped ringing, earliest deadline first.
    @discardableResult
    public func expireRinging(now: Date) -> [UUID] {
        let overdue = calls.filter { _, call in call.state == .ringing && (call.ringDeadline.map { $0 <= now } ?? false)
        }
        .sorted { ($0.value.ringDeadline!, $0.key.uuidText) < ($1.value.ringDeadline!, $1.key.uuidText) }
        for (uuid, call) in overdue {
            finish(uuid, call, event: .missed, reason: .unanswered, at: now)
        }
        return overdue.map(\.key)
    }

    /// The earliest ring deadline among ringing calls, for the daemon's timer; nil if none ring.
    public var nextRingDeadline: Date? { calls.values.compactMap(\.ringDeadline).min() }

    /// The live calls, ordered by id.
    public var liveCalls: [CallSnapshot] {
        calls.map {
            CallSnapshot(
                uuid: $0.key,
                update: $0.value.update,
                state: $0.value.state,
                ringDeadline: $0.value.ringDeadline
            )
        }
        .sorted { $0.uuid.uuidText < $1.uuid.uuidText }
    }

    /// The live call with this id, if any.
    public func call(_ uuid: UUID) -> CallSnapshot? {
        calls[uuid].map { CallSnapshot(uuid: uuid, update: $0.update, state: $0.state, ringDeadline: $0.ringDeadline) }
    }

    // MARK: Private

    private func finish(_ uuid: UUID, _ call: LiveCall, event: CallEvent.Kind, reason: CallEndedReason, at date: Date) {
        calls[uuid] = nil
        liveIDs.remove(uuid)
        remember(uuid)
        logger.info("call \(event)", metadata: ["callID": "\(uuid)", "reason": "\(reason)"])
        emit(event, uuid, call.update, reason: .ended(reason), at: date)
    }

    private func remember(_ uuid: UUID) {
        guard configuration.endedCallMemory > 0, endedIDs.insert(uuid).inserted else { return }
        endedOrder.append(uuid)
        if endedOrder.count > configuration.endedCallMemory {
            endedIDs.remove(endedOrder.removeFirst())
        }
    }

    private func emit(
        _ kind: CallEvent.Kind,
        _ uuid: UUID,
        _ update: CallUpdate,
        reason: CallEvent.Reason?,
        at date: Date
    ) {
        let event = CallEvent(
            event: kind,
            callID: uuid,
            account: update.account,
            reason: reason,
            handle: update.remoteHandle.value,
            displayName: update.localizedCallerName,
            atMs: date.milliseconds
        )
        for sink in sinks { sink.emit(event) }
    }

    private func refuse(_ uuid: UUID, _ error: FilterError) -> FilterError {
        logger.info("call refused", metadata: ["callID": "\(uuid)", "code": "\(error.code)"])
        return error
    }

    private func unknown(_ uuid: UUID) -> FilterError {
        FilterError(code: .unknownCallUUID, message: "no live call has id \(uuid); it never rang or already ended")
    }
}
