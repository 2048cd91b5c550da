#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The provider's rules for a new incoming call, as a value: the one place that says whether a call would ring or
/// be refused, and with which ``IncomingCallError``.
///
/// ``CallProvider/reportNewIncomingCall(uuid:update:ringTimeoutSeconds:)`` applies it to its live calls. The filter
/// engine takes a copy (``CallProvider/admission``) before deciding a batch, so the decision for an invite is the
/// provider's own answer (a refused call is decided as a missed call, never as `ring`), and it is final before the
/// decision is committed.
public struct CallAdmission: Sendable, Hashable {
    /// The provider's configuration when the copy was taken.
    public var configuration: CallProviderConfiguration
    /// Calls that are live (ringing or active).
    public var liveIDs: Set<UUID>
    /// Calls that ended recently (their ids are refused as duplicates).
    public var endedIDs: Set<UUID>

    public init(configuration: CallProviderConfiguration, liveIDs: Set<UUID> = [], endedIDs: Set<UUID> = []) {
        self.configuration = configuration
        self.liveIDs = liveIDs
        self.endedIDs = endedIDs
    }

    /// Why the call would be refused, or nil if it would ring. Checks, in order: the id is not live or recently
    /// ended; the handle type is supported; the handle is not blocked; do-not-disturb is off; fewer than
    /// `maximumCallGroups` calls are live.
    public func refusal(uuid: UUID, update: CallUpdate) -> IncomingCallError? {
        if self.liveIDs.contains(uuid) || self.endedIDs.contains(uuid) {
            return IncomingCallError(
                code: .callUUIDAlreadyExists,
                message: "call \(uuid) was already reported; report each call id once"
            )
        }
        guard self.configuration.supportedHandleTypes.contains(update.remoteHandle.type) else {
            return IncomingCallError(
                code: .unentitled,
                message: "handle type \(update.remoteHandle.type) is not supported; add it to supportedHandleTypes"
            )
        }
        guard !self.configuration.blockedHandles.contains(update.remoteHandle) else {
            return IncomingCallError(code: .filteredByBlockList, message: "the caller is on the block list")
        }
        guard !self.configuration.doNotDisturb else {
            return IncomingCallError(code: .filteredByDoNotDisturb, message: "do-not-disturb is on")
        }
        guard self.liveIDs.count < self.configuration.maximumCallGroups else {
            return IncomingCallError(
                code: .maximumCallsReached,
                message: "\(self.liveIDs.count) calls are live, the maximum is \(self.configuration.maximumCallGroups)"
            )
        }
        return nil
    }

    /// Like ``refusal(uuid:update:)``, and an admitted call then counts as live for the next one.
    public mutating func admit(uuid: UUID, update: CallUpdate) -> IncomingCallError? {
        if let refusal = self.refusal(uuid: uuid, update: update) { return refusal }
        self.liveIDs.insert(uuid)
        return nil
    }

    /// A live call ends: it no longer counts against the maximum, and its id is not reported again.
    public mutating func end(uuid: UUID) {
        if self.liveIDs.remove(uuid) != nil { self.endedIDs.insert(uuid) }
    }
}
