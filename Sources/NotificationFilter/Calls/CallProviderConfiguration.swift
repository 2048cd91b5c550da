/// What the call provider supports and filters, like CallKit's `CXProviderConfiguration`.
public struct CallProviderConfiguration: Hashable, Sendable {
    /// How many calls may be live (ringing or active) at once. An incoming call always starts in a
    /// call group of its own, as in CallKit, so this bounds concurrent calls. Default 2 (CallKit's).
    public var maximumCallGroups: Int
    /// How many calls a group may hold (CallKit's default is 1). Kept for parity; incoming calls are
    /// never merged here, so with groups of one call this does not limit further.
    public var maximumCallsPerCallGroup: Int
    /// Whether video calls can be shown as video; if not, a video call rings as an audio call.
    public var supportsVideo: Bool
    /// The handle types the provider accepts; others are refused as `unentitled`.
    public var supportedHandleTypes: Set<CallHandleType>
    /// When on, every new call is refused with `filteredByDoNotDisturb` (and still counts as reported).
    public var doNotDisturb: Bool
    /// Handles whose calls are refused with `filteredByBlockList`.
    public var blockedHandles: Set<CallHandle>
    /// How long a call rings when its report gives no timeout. Default 60 s (Threema's; Wire 30, Element X 90).
    public var defaultRingTimeoutSeconds: Double
    /// How many ended call ids are remembered to refuse a late duplicate with `callUUIDAlreadyExists`.
    public var endedCallMemory: Int

    public init(
        maximumCallGroups: Int = 2,
        maximumCallsPerCallGroup: Int = 1,
        supportsVideo: Bool = true,
        supportedHandleTypes: Set<CallHandleType> = [.generic, .phoneNumber, .emailAddress],
        doNotDisturb: Bool = false,
        blockedHandles: Set<CallHandle> = [],
        defaultRingTimeoutSeconds: Double = 60,
        endedCallMemory: Int = 1_024
    ) {
        self.maximumCallGroups = max(1, maximumCallGroups)
        self.maximumCallsPerCallGroup = max(1, maximumCallsPerCallGroup)
        self.supportsVideo = supportsVideo
        self.supportedHandleTypes = supportedHandleTypes
        self.doNotDisturb = doNotDisturb
        self.blockedHandles = blockedHandles
        self.defaultRingTimeoutSeconds = defaultRingTimeoutSeconds
        self.endedCallMemory = max(0, endedCallMemory)
    }
}
