#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The provider's rules for a new incoming call, as a value: the one place that says whether a call would ring or
/// be refused, and with which ``FilterError``.
///
/// ``CallProvider/reportNewIncomingCall(uuid:update:ringTimeoutSeconds:)`` applies it to its live calls. The filter
/// engine takes a copy (``CallProvider/admission``) before deciding a batch, so the decision for an invite is the
/// provider's own answer (a refused call is decided as a missed call, never as `ring`), and it is final before the
/// decision is committed.
public struct CallAdmission: Sendable, Hashable {
    /// The provider's configuration when the copy was taken.
    public var configuration: CallProviderConfiguration
    /// The provider's sets when the copy was taken: shared with the provider, never written here (a batch's changes
    /// go to the small sets below, so taking and updating a copy costs nothing per live call).
    private let baseLive: Set<UUID>
    private let baseEnded: Set<UUID>
    /// Admitted since the copy was taken.
    private var admitted: Set<UUID> = []
    /// Ended since the copy was taken.
    private var endedSince: Set<UUID> = []
    /// How many calls are live.
    private var liveCount: Int

    public init(configuration: CallProviderConfiguration, liveIDs: Set<UUID> = [], endedIDs: Set<UUID> = []) {
        self.configuration = configuration
        self.baseLive = liveIDs
        self.baseEnded = endedIDs
        self.liveCount = liveIDs.count
    }

    /// Calls that are live (ringing or active).
    public var liveIDs: Set<UUID> { self.baseLive.union(self.admitted).subtracting(self.endedSince) }
    /// Calls that ended recently (their ids are refused as duplicates).
    public var endedIDs: Set<UUID> { self.baseEnded.union(self.endedSince) }

    private func isLive(_ uuid: UUID) -> Bool {
        !self.endedSince.contains(uuid) && (self.admitted.contains(uuid) || self.baseLive.contains(uuid))
    }

    private func hasEnded(_ uuid: UUID) -> Bool {
        self.endedSince.contains(uuid) || self.baseEnded.contains(uuid)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.configuration == rhs.configuration && lhs.liveIDs == rhs.liveIDs && lhs.endedIDs == rhs.endedIDs
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.configuration)
        hasher.combine(self.liveIDs)
        hasher.combine(self.endedIDs)
    }

    /// Why the call would be refused, or nil if it would ring. Checks, in order: the id is not live or recently
    /// ended; the handle type is supported; the handle is not blocked; do-not-disturb is off; fewer than
    /// `maximumCallGroups` calls are live.
    public func refusal(uuid: UUID, update: CallUpdate) -> FilterError? {
        if self.isLive(uuid) || self.hasEnded(uuid) {
            return FilterError(
                code: .callUUIDAlreadyExists,
                message: "call \(uuid) was already reported; report each call id once"
            )
        }
        guard self.configuration.supportedHandleTypes.contains(update.remoteHandle.type) else {
            return FilterError(
                code: .unentitled,
                message: "handle type \(update.remoteHandle.type) is not supported; add it to supportedHandleTypes"
            )
        }
        guard !self.configuration.blockedHandles.contains(update.remoteHandle) else {
            return FilterError(code: .filteredByBlockList, message: "the caller is on the block list")
        }
        guard !self.configuration.doNotDisturb else {
            return FilterError(code: .filteredByDoNotDisturb, message: "do-not-disturb is on")
        }
        guard self.liveCount < self.configuration.maximumCallGroups else {
            return FilterError(
                code: .maximumCallsReached,
                message: "\(self.liveCount) calls are live, the maximum is \(self.configuration.maximumCallGroups)"
            )
        }
        return nil
    }

    /// Like ``refusal(uuid:update:)``, and an admitted call then counts as live for the next one.
    public mutating func admit(uuid: UUID, update: CallUpdate) -> FilterError? {
        if let refusal = self.refusal(uuid: uuid, update: update) { return refusal }
        self.admitted.insert(uuid)
        self.liveCount += 1
        return nil
    }

    /// A live call ends: it no longer counts against the maximum, and its id is not reported again.
    public mutating func end(uuid: UUID) {
        guard self.isLive(uuid) else { return }
        self.endedSince.insert(uuid)
        self.liveCount -= 1
    }
}
