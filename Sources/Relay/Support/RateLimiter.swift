import Locking

/// Token buckets per key, in memory: `ratePerMinute` tokens a minute, at most `burst` stored.
///
/// Keys are a recipient user id or a delivery token's hash; nothing is written to disk. Time is injected.
final class RateLimiter: Sendable {
    struct Limit: Sendable, Hashable {
        var ratePerMinute: Double
        var burst: Double
    }

    private struct Bucket {
        var tokens: Double
        var updatedMs: Int64
    }

    let limit: Limit
    private let buckets = PThreadMutex<[String: Bucket]>([:])

    init(limit: Limit) {
        self.limit = limit
    }

    /// Seconds until `cost` tokens are available for `key`, or 0 when they are now (without taking them).
    func wait(for key: String, cost: Double, nowMs: Int64) -> Int {
        self.buckets.withLock { buckets in
            let tokens = self.refilled(buckets[key], nowMs: nowMs).tokens
            return self.secondsUntil(cost, have: tokens)
        }
    }

    /// Takes `cost` tokens from `key` (callers check ``wait(for:cost:nowMs:)`` first, under their own decision).
    func take(_ key: String, cost: Double, nowMs: Int64) {
        self.buckets.withLock { buckets in
            var bucket = self.refilled(buckets[key], nowMs: nowMs)
            bucket.tokens -= cost
            buckets[key] = bucket
            if buckets.count > 100_000 {
                // Forget full buckets: they carry no state a new bucket would not.
                buckets = buckets.filter { self.refilled($0.value, nowMs: nowMs).tokens < self.limit.burst }
            }
        }
    }

    private func refilled(_ bucket: Bucket?, nowMs: Int64) -> Bucket {
        guard var bucket else { return Bucket(tokens: self.limit.burst, updatedMs: nowMs) }
        let elapsed = Double(max(nowMs - bucket.updatedMs, 0)) / 60_000
        bucket.tokens = min(self.limit.burst, bucket.tokens + elapsed * self.limit.ratePerMinute)
        bucket.updatedMs = nowMs
        return bucket
    }

    private func secondsUntil(_ cost: Double, have tokens: Double) -> Int {
        guard tokens < cost else { return 0 }
        guard self.limit.ratePerMinute > 0 else { return 3600 }
        let seconds = (cost - tokens) / self.limit.ratePerMinute * 60
        return max(1, Int(seconds.rounded(.up)))
    }
}
