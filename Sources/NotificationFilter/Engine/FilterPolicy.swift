/// The filter's tunable rules. Defaults follow docs/FAILURE-MODES.md "Ring windows" and APNs behaviour.
public struct FilterPolicy: Sendable, Hashable {
    /// What to do with a message from a sender not in the contacts.
    public enum UnknownSenderPolicy: String, Sendable, Hashable, CaseIterable {
        /// Show the generic fallback alert (default: the user learns something arrived).
        case fallback
        /// Show nothing.
        case silence
    }

    /// How far a send time may be in the future (the sender's clock ahead of ours) before it is refused with
    /// reason `clock`. Also added to ring timeouts, for a sender's clock behind ours. Default 30 s.
    public var clockSkewMs: Int64 = 30_000
    /// How long message ids are remembered for replay detection. A message sent longer ago than this cannot be
    /// checked and gets `fallback` with reason `stale`. Default 48 h (APNs stores nothing: expiration 0).
    public var replayRetentionMs: Int64 = 48 * 3_600_000
    /// The longest ring window an invite can ask for (PROTOCOL.md: `ring_timeout_s` is at most 3600).
    public static let maximumRingTimeoutMs: Int64 = 3_600_000

    /// How long a cancel that came before its invite is kept: an invite sent before the cancel (same sender
    /// clock, each at most `clockSkewMs` ahead) can still ring only within its ring window, and is decided at all
    /// only within the replay window, so after the shorter of the two plus twice the skew the late invite is
    /// `invite-expired` or `stale` with or without the cancel.
    public var earlyCancelRetentionMs: Int64 {
        min(Self.maximumRingTimeoutMs, self.replayRetentionMs) + 2 * self.clockSkewMs
    }

    /// Unknown senders: fallback (default) or silence.
    public var unknownSender: UnknownSenderPolicy = .fallback

    public init() {}
}
