public import Logging

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A call handed from the filter to the reporter, like the payload of iOS's `reportNewIncomingVoIPPushPayload`.
public struct IncomingCallPayload: Hashable, Sendable {
    /// The call id (the same across retries, devices and the cancel).
    public var callID: UUID
    /// Who calls and how to show it.
    public var update: CallUpdate
    /// How long to ring; nil uses the provider's default.
    public var ringTimeoutSeconds: Double?
    /// Non-nil when the filter found the call must not ring (too old, cancelled before its invite,
    /// answered elsewhere): the call is still reported, then ended at once with this reason.
    public var staleReason: CallEndedReason?

    public init(
        callID: UUID,
        update: CallUpdate,
        ringTimeoutSeconds: Double? = nil,
        staleReason: CallEndedReason? = nil
    ) {
        self.callID = callID
        self.update = update
        self.ringTimeoutSeconds = ringTimeoutSeconds
        self.staleReason = staleReason
    }
}

/// The handoff from the filter to the call provider, enforcing iOS's rule: every handoff is reported.
///
/// iOS terminates an app that takes a VoIP handoff and does not report a call (wire-ios #5070, where
/// skipping a duplicate report was itself the crash). So ``reportNewIncomingVoIPPushPayload(_:)``
/// calls the provider's `reportNewIncomingCall` on every path: a refusal (duplicate, filtered, too
/// many calls) still counts as reported, as on iOS, and a stale handoff is reported and then ended at
/// once with its reason, as Element X does. The ``counters`` prove it: `violations` counts handoffs
/// that completed without a report and stays at zero by construction.
public actor CallReporter {
    private let provider: CallProvider
    private let logger: Logger
    private var handoffs = 0
    private var reports = 0
    private var violations = 0

    /// Creates a reporter that hands calls to `provider`.
    ///
    /// - Parameters:
    ///   - provider: The call provider every handoff is reported to.
    ///   - logger: Where handoff outcomes are logged (call ids and codes only).
    public init(provider: CallProvider, logger: Logger) {
        self.provider = provider
        self.logger = logger
    }

    /// Reports one handed-off call to the provider, then ends it at once if it is stale.
    ///
    /// - Parameter payload: The call the filter decided to hand off.
    /// - Returns: How the handoff went; `reported` is always true.
    @discardableResult
    public func reportNewIncomingVoIPPushPayload(_ payload: IncomingCallPayload) async -> HandoffOutcome {
        handoffs += 1
        var outcome = HandoffOutcome(reported: false, ringing: false, refusal: nil, endedAtOnce: nil)
        defer {
            if !outcome.reported {
                violations += 1
                logger.critical("handoff completed without a call report", metadata: ["callID": "\(payload.callID)"])
            }
        }
        do {
            try await provider.reportNewIncomingCall(
                uuid: payload.callID,
                update: payload.update,
                ringTimeoutSeconds: payload.ringTimeoutSeconds
            )
            outcome.ringing = true
        } catch {
            outcome.refusal = error.code
        }
        outcome.reported = true
        reports += 1

        if outcome.ringing, let reason = payload.staleReason {
            await provider.reportCall(uuid: payload.callID, endedAt: nil, reason: reason)
            outcome.ringing = false
            outcome.endedAtOnce = reason
        }
        logger.info(
            "handoff reported",
            metadata: [
                "callID": "\(payload.callID)",
                "ringing": "\(outcome.ringing)",
                "refusal": "\(outcome.refusal?.rawValue ?? "-")",
                "endedAtOnce": "\(outcome.endedAtOnce?.rawValue ?? "-")",
            ]
        )
        return outcome
    }

    /// Handoffs received, reports made and violations (always zero) so far.
    public var counters: HandoffCounters {
        HandoffCounters(handoffs: handoffs, reports: reports, violations: violations)
    }
}
