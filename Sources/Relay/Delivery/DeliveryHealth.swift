import Locking

/// Whether delivery works, from the outcomes of the latest delivery attempts: what readiness reports
/// (docs/RELAY.md "Health").
///
/// An attempt *works* when APNs answered it with anything but a fault of the relay's own (200, or a refusal of the
/// push's address: 400, 410, 413), and *fails* when APNs could not be reached or did not answer (connection refused, a
/// certificate that does not verify, a timeout), or answered 403 (the relay's key), 429 or 5xx. Delivery is failing
/// when at least ``minimumAttempts`` attempts were made within ``window`` and none of them worked.
public final class DeliveryHealth: Sendable {
    /// What readiness says about delivery.
    public enum Verdict: Sendable, Hashable {
        case working
        /// No attempt reached APNs: the message says why (the last failure).
        case apnsUnreachable(String)
        /// APNs answered, and refused every attempt for a reason of the relay's own (403, 429, 5xx).
        case failing(String)
    }

    enum Attempt: Sendable {
        case worked
        case unreachable(String)
        case refused(String)
    }

    /// How far back attempts count (ms).
    public let window: Int64
    /// How many failed attempts, and no working one, make delivery failing.
    public let minimumAttempts: Int
    private let attempts = PThreadMutex<[(atMs: Int64, attempt: Attempt)]>([])

    public init(window: Int64 = 5 * 60_000, minimumAttempts: Int = 3) {
        self.window = window
        self.minimumAttempts = minimumAttempts
    }

    func record(_ attempt: Attempt, atMs: Int64) {
        self.attempts.withLock { attempts in
            attempts.append((atMs, attempt))
            // Only the latest attempts matter: one that worked, or a run of failures.
            if attempts.count > 64 { attempts.removeFirst(attempts.count - 64) }
        }
    }

    /// The verdict at `nowMs`.
    public func verdict(nowMs: Int64) -> Verdict {
        self.attempts.withLock { attempts in
            let recent = attempts.filter { $0.atMs > nowMs - self.window }
            guard recent.count >= self.minimumAttempts else { return .working }
            var last: Attempt?
            for (_, attempt) in recent {
                if case .worked = attempt { return .working }
                last = attempt
            }
            switch last {
            case .unreachable(let message)?:
                return .apnsUnreachable("the last \(recent.count) deliveries did not reach APNs: \(message)")
            case .refused(let message)?:
                return .failing("APNs refused the last \(recent.count) deliveries: \(message)")
            case .worked?, nil:
                return .working
            }
        }
    }
}
