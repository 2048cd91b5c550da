import Foundation
import RelayClient

/// The decisions both stores make the same way: the relay-side pin of a published list, idempotent replays, and
/// how an outcome maps to a row.
enum StorePolicy {
    /// How long an idempotency key is remembered.
    static let idempotencyWindowMs: Int64 = 24 * 3600 * 1000

    /// How long a completed push's row (delivered, failed, unregistered, removed; its envelope already cleared) stays:
    /// long past any lease, so a late second completion is still counted as a duplicate, then deleted by `purge`.
    static let completedRetentionMs: Int64 = 3600 * 1000

    /// Deletes the rows of pushes completed at or before the parameter `cutoff` (an SQL placeholder).
    static func purgeCompletedSQL(_ cutoff: String) -> String {
        """
        DELETE FROM pushes WHERE state IN ('delivered', 'failed', 'unregistered', 'removed')
          AND completed_at_ms <= \(cutoff)
        """
    }

    /// Whether `list` may replace `stored` (docs/RELAY.md "Publishing a device list").
    ///
    /// - Returns: false for the identical list (nothing to store).
    static func admit(_ list: NewList, over stored: StoredList) throws(RelayError) -> Bool {
        guard list.userSigningKey == stored.userSigningKey else {
            throw RelayError(
                .signingKeyChanged,
                "user \"\(list.userID)\" is registered with another user signing key; this relay never replaces it "
                    + "through the API (an account reset is an operator action)"
            )
        }
        if list.listVersion < stored.listVersion {
            throw RelayError(
                .listRollback,
                "list_version \(list.listVersion) is below the stored \(stored.listVersion): publish the newest list"
            )
        }
        if list.listVersion == stored.listVersion {
            guard list.digest == stored.digest else {
                throw RelayError(
                    .listVersionReused,
                    "list_version \(list.listVersion) is stored with other contents: sign the change with a higher version"
                )
            }
            return false
        }
        return true
    }

    static func accepted(_ submit: NewSubmit) -> EnqueueOutcome {
        EnqueueOutcome(
            pushes: submit.pushes.map { RelayAPI.AcceptedPush(deviceID: $0.deviceID, pushID: $0.pushID) },
            duplicate: false
        )
    }

    static func encode(_ pushes: [RelayAPI.AcceptedPush]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding an array of string structs cannot fail.
        return String(decoding: try! encoder.encode(pushes), as: UTF8.self)
    }

    /// The answer to a submit whose idempotency key is already recorded.
    static func replay(
        _ digest: [UInt8],
        _ response: String,
        for submit: NewSubmit
    ) throws(RelayError)
        -> EnqueueOutcome
    {
        guard digest == submit.requestDigest else {
            throw RelayError(
                .idempotencyKeyReused,
                "this Idempotency-Key was used for other pushes: use a new key for a new submit"
            )
        }
        guard let pushes = try? JSONDecoder().decode([RelayAPI.AcceptedPush].self, from: Data(response.utf8)) else {
            throw RelayError(.internalError, "the stored answer of this idempotency key is unreadable")
        }
        return EnqueueOutcome(pushes: pushes, duplicate: true)
    }

    /// A dead address to mark on the device, from an outcome: (address, when, failed reason; nil for a 410).
    static func deadAddress(_ outcome: PushOutcome) -> (address: String, atMs: Int64, failedReason: String?)? {
        switch outcome {
        case .unregistered(let atMs, let token): (token, atMs, nil)
        case .addressRefused(let atMs, let token, _, let reason): (token, atMs, reason)
        default: nil
        }
    }

    /// Whether a completion finding its push already completed is the same lease's earlier one (`owner` and
    /// `attempt` as recorded by the final completion).
    static func sameLease(
        recordedOwner: String?,
        recordedAttempts: Int,
        owner: String,
        attempt: Int?
    ) -> Bool {
        guard let attempt, let recordedOwner else { return false }
        return recordedOwner == owner && recordedAttempts == attempt
    }

    struct Row {
        var state: PushState
        var retryAtMs: Int64?
        var status: Int?
        var reason: String?
        /// A final state: the envelope is cleared and the completion counted.
        var final: Bool
    }

    static func row(for outcome: PushOutcome) -> Row {
        switch outcome {
        case .delivered(let status):
            Row(state: .delivered, status: status, final: true)
        case .retry(let retryAtMs, let status, let reason):
            Row(state: .queued, retryAtMs: retryAtMs, status: status, reason: reason, final: false)
        case .failed(let status, let reason):
            Row(state: .failed, status: status, reason: reason, final: true)
        case .unregistered:
            Row(state: .unregistered, status: 410, reason: "Unregistered", final: true)
        case .addressRefused(_, _, let status, let reason):
            Row(state: .failed, status: status, reason: reason, final: true)
        case .removed:
            Row(state: .removed, reason: "no active push address", final: true)
        }
    }
}
