/// Faults the gateway injects so clients can test retries, timeouts and reconnection.
///
/// Each otherwise-acceptable request draws one number from a generator seeded with ``seed`` and is answered
/// `429 TooManyRequests`, `500 InternalServerError`, `503 ServiceUnavailable`, or never (silent), with the given
/// probabilities; the rest are delivered. A faulted request is never delivered to the sink. Requests that fail
/// validation get their validation error and draw nothing, so a run is deterministic for a given seed and order.
/// ``responseDelay`` delays every answer. Stream-limit drops and GOAWAY count the streams of each connection.
public struct FaultInjection: Sendable, Hashable {
    /// Lower `SETTINGS_MAX_CONCURRENT_STREAMS` once a connection has opened a number of streams.
    public struct StreamLimitDrop: Sendable, Hashable {
        /// The number of streams after which the new limit is sent.
        public var afterStreams: Int
        /// The new (lower) limit.
        public var maxConcurrentStreams: Int

        /// Creates a stream-limit drop.
        ///
        /// - Parameters:
        ///   - afterStreams: Streams on a connection before the SETTINGS frame is sent.
        ///   - maxConcurrentStreams: The limit advertised from then on.
        public init(afterStreams: Int, maxConcurrentStreams: Int) {
            self.afterStreams = afterStreams
            self.maxConcurrentStreams = maxConcurrentStreams
        }
    }

    /// Send GOAWAY once a connection has answered a number of streams.
    public struct GoAway: Sendable, Hashable {
        /// Streams a connection admits; when they are answered the gateway sends GOAWAY and closes. Later streams
        /// are refused with `RST_STREAM(REFUSED_STREAM)`.
        public var afterStreams: Int
        /// The reason placed in the GOAWAY debug data as `{"reason":"..."}`.
        public var reason: String

        /// Creates a GOAWAY fault.
        ///
        /// - Parameters:
        ///   - afterStreams: Streams answered on a connection before GOAWAY.
        ///   - reason: The JSON reason (default `Shutdown`).
        public init(afterStreams: Int, reason: String = "Shutdown") {
            self.afterStreams = afterStreams
            self.reason = reason
        }
    }

    /// The generator seed: the same seed and request order give the same answers.
    public var seed: UInt64
    /// Probability of `429 TooManyRequests`.
    public var tooManyRequestsRate: Double
    /// Probability of `500 InternalServerError`.
    public var internalServerErrorRate: Double
    /// Probability of `503 ServiceUnavailable`.
    public var serviceUnavailableRate: Double
    /// Probability that the stream is never answered.
    public var silentRate: Double
    /// A delay before every answer.
    public var responseDelay: Duration
    /// A mid-connection stream-limit drop, if any.
    public var streamLimitDrop: StreamLimitDrop?
    /// A GOAWAY after some streams, if any.
    public var goAway: GoAway?

    /// Creates a fault configuration; every fault is off by default.
    ///
    /// - Parameters:
    ///   - seed: The generator seed.
    ///   - tooManyRequestsRate: Probability of 429.
    ///   - internalServerErrorRate: Probability of 500.
    ///   - serviceUnavailableRate: Probability of 503.
    ///   - silentRate: Probability of never answering.
    ///   - responseDelay: Delay before every answer.
    ///   - streamLimitDrop: A mid-connection stream-limit drop.
    ///   - goAway: A GOAWAY after some streams.
    public init(
        seed: UInt64 = 0,
        tooManyRequestsRate: Double = 0,
        internalServerErrorRate: Double = 0,
        serviceUnavailableRate: Double = 0,
        silentRate: Double = 0,
        responseDelay: Duration = .zero,
        streamLimitDrop: StreamLimitDrop? = nil,
        goAway: GoAway? = nil
    ) {
        self.seed = seed
        self.tooManyRequestsRate = tooManyRequestsRate
        self.internalServerErrorRate = internalServerErrorRate
        self.serviceUnavailableRate = serviceUnavailableRate
        self.silentRate = silentRate
        self.responseDelay = responseDelay
        self.streamLimitDrop = streamLimitDrop
        self.goAway = goAway
    }

    /// No faults.
    public static let none = FaultInjection()

    func validate() throws(GatewayError) {
        let rates = [
            ("tooManyRequestsRate", self.tooManyRequestsRate),
            ("internalServerErrorRate", self.internalServerErrorRate),
            ("serviceUnavailableRate", self.serviceUnavailableRate),
            ("silentRate", self.silentRate),
        ]
        for (name, rate) in rates where !(0...1).contains(rate) {
            throw .invalidConfiguration("faults.\(name) is \(rate): give a probability between 0 and 1")
        }
        guard rates.map(\.1).reduce(0, +) <= 1 + 1e-9 else {
            throw .invalidConfiguration("the fault rates add up to more than 1: lower some of them")
        }
        guard self.responseDelay >= .zero else {
            throw .invalidConfiguration("faults.responseDelay must not be negative")
        }
        if let drop = self.streamLimitDrop, drop.afterStreams < 1 || drop.maxConcurrentStreams < 1 {
            throw .invalidConfiguration("faults.streamLimitDrop needs afterStreams >= 1 and maxConcurrentStreams >= 1")
        }
        if let goAway = self.goAway, goAway.afterStreams < 1 {
            throw .invalidConfiguration("faults.goAway.afterStreams must be at least 1")
        }
    }
}
