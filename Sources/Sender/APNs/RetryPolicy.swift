/// When and how long to wait before sending a push again: exponential backoff with jitter and a cap.
///
/// Only 429 and 5xx answers are retried. 400, 403, 404, 405, 410 and 413 mean the request itself is wrong (or the
/// device is gone) and sending it again cannot help; 403 `ExpiredProviderToken` is handled apart, by one token
/// regeneration, not by this policy. A stream the server refused (`REFUSED_STREAM`) is retried under this policy,
/// since HTTP/2 guarantees it was not processed. Other local failures (timeouts, broken connections) are not
/// retried: a push that timed out may have been delivered, and a duplicate call push rings twice.
///
/// The delay before retry *n* (1-based) is `min(initialDelay * multiplier^(n-1), maxDelay)`, lengthened by a random
/// fraction up to `jitter` of itself and capped again at `maxDelay`. Jitter only ever lengthens a delay, so the
/// configured schedule is a lower bound that tests can measure. The default `sleep` is `Task.sleep`: it really
/// waits (several clients shipped a backoff that had silently become zero).
public struct RetryPolicy: Sendable {
    /// The most HTTP requests made for one push because of 429/5xx answers (1 = never retry).
    public var maxAttempts: Int
    /// The delay before the first retry.
    public var initialDelay: Duration
    /// The factor each further delay grows by.
    public var multiplier: Double
    /// The longest single delay.
    public var maxDelay: Duration
    /// The largest random extension of a delay, as a fraction of it (0 = none; 0.2 = up to 20% longer).
    public var jitter: Double
    /// Waits for a delay; throws when cancelled. Tests may inject a recorder, the default really sleeps.
    public var sleep: @Sendable (Duration) async throws -> Void

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - maxAttempts: Total attempts for 429/5xx, at least 1 (default 3).
    ///   - initialDelay: Delay before the first retry (default 1 s).
    ///   - multiplier: Growth factor, at least 1 (default 2).
    ///   - maxDelay: Cap on any delay (default 30 s).
    ///   - jitter: Random lengthening fraction in 0...1 (default 0.2).
    ///   - sleep: How to wait (default `Task.sleep(for:)`).
    /// - Throws: ``SenderError/Code/invalidConfiguration`` for values out of range.
    public init(
        maxAttempts: Int = 3,
        initialDelay: Duration = .seconds(1),
        multiplier: Double = 2,
        maxDelay: Duration = .seconds(30),
        jitter: Double = 0.2,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) throws(SenderError) {
        guard maxAttempts >= 1 else {
            throw SenderError(.invalidConfiguration, "retry maxAttempts must be at least 1 (1 = never retry)")
        }
        guard initialDelay >= .zero, maxDelay >= initialDelay else {
            throw SenderError(.invalidConfiguration, "retry delays must satisfy 0 <= initialDelay <= maxDelay")
        }
        guard multiplier >= 1, multiplier.isFinite else {
            throw SenderError(.invalidConfiguration, "retry multiplier must be a finite number >= 1")
        }
        guard (0...1).contains(jitter) else {
            throw SenderError(.invalidConfiguration, "retry jitter must be a fraction between 0 and 1")
        }
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.sleep = sleep
    }

    /// Three attempts, 1 s then 2 s (+ up to 20%), capped at 30 s, really sleeping.
    public static var `default`: RetryPolicy {
        // The literal values are inside every range checked above.
        try! RetryPolicy()
    }

    /// One attempt, no retries.
    public static var never: RetryPolicy {
        try! RetryPolicy(maxAttempts: 1)
    }

    /// Whether an answer with this status may be retried under this policy.
    ///
    /// - Parameter status: The HTTP status APNs answered.
    /// - Returns: `true` for 429 and 5xx.
    public static func isRetryable(status: Int) -> Bool {
        status == 429 || (500...599).contains(status)
    }

    /// The delay before retry `retry` without jitter: the lower bound of the actual delay.
    ///
    /// - Parameter retry: The retry number, starting at 1.
    /// - Returns: `min(initialDelay * multiplier^(retry-1), maxDelay)`.
    public func baseDelay(beforeRetry retry: Int) -> Duration {
        let exponent = Double(max(retry - 1, 0))
        let seconds = Self.seconds(self.initialDelay) * Self.power(self.multiplier, exponent)
        return min(Self.duration(seconds: seconds), self.maxDelay)
    }

    /// The delay before retry `retry`, with jitter drawn from `random` (a value in `0..<1`).
    ///
    /// - Parameters:
    ///   - retry: The retry number, starting at 1.
    ///   - random: A uniform value in `0..<1`; the client passes `Double.random(in: 0..<1)`.
    /// - Returns: `min(baseDelay * (1 + jitter * random), maxDelay)`.
    public func delay(beforeRetry retry: Int, random: Double) -> Duration {
        let base = Self.seconds(self.baseDelay(beforeRetry: retry))
        let jittered = base * (1 + self.jitter * min(max(random, 0), 1))
        return min(Self.duration(seconds: jittered), self.maxDelay)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    private static func duration(seconds: Double) -> Duration {
        // Clamp before converting: an enormous multiplier must not trap in Int64(_:).
        .nanoseconds(Int64(min(seconds * 1e9, 1e18).rounded()))
    }

    private static func power(_ base: Double, _ exponent: Double) -> Double {
        var result = 1.0
        var remaining = Int(exponent)
        while remaining > 0 && result.isFinite {
            result *= base
            remaining -= 1
        }
        return result
    }
}
