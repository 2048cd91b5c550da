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
    ///
    /// - Parameter limit: This key's limit, when it is not the limiter's (a token's share of its recipient's).
    func wait(for key: String, cost: Double, nowMs: Int64, limit: Limit? = nil) -> Int {
        let limit = limit ?? self.limit
        return self.buckets.withLock { buckets in
            let tokens = Self.refilled(buckets[key], limit, nowMs: nowMs).tokens
            return Self.secondsUntil(cost, have: tokens, limit)
        }
    }

    /// Takes `cost` tokens from `key` (callers check ``wait(for:cost:nowMs:limit:)`` first, under their own decision).
    func take(_ key: String, cost: Double, nowMs: Int64, limit: Limit? = nil) {
        let limit = limit ?? self.limit
        self.buckets.withLock { buckets in
            var bucket = Self.refilled(buckets[key], limit, nowMs: nowMs)
            bucket.tokens -= cost
            buckets[key] = bucket
            if buckets.count > 100_000 {
                // Forget buckets full again: they carry no state a new bucket would not. (A bucket under another limit
                // than the limiter's is full at its own burst, at most the limiter's: kept until then.)
                buckets = buckets.filter { Self.refilled($0.value, self.limit, nowMs: nowMs).tokens < self.limit.burst }
            }
        }
    }

    private static func refilled(_ bucket: Bucket?, _ limit: Limit, nowMs: Int64) -> Bucket {
        guard var bucket else { return Bucket(tokens: limit.burst, updatedMs: nowMs) }
        let elapsed = Double(max(nowMs - bucket.updatedMs, 0)) / 60_000
        bucket.tokens = min(limit.burst, bucket.tokens + elapsed * limit.ratePerMinute)
        bucket.updatedMs = nowMs
        return bucket
    }

    private static func secondsUntil(_ cost: Double, have tokens: Double, _ limit: Limit) -> Int {
        guard tokens < cost else { return 0 }
        guard limit.ratePerMinute > 0 else { return 3600 }
        let seconds = (cost - tokens) / limit.ratePerMinute * 60
        return max(1, Int(seconds.rounded(.up)))
    }
}
