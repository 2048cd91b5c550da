import Locking

/// Draws the fault for each otherwise-acceptable request from a generator seeded by the configuration.
final class FaultInjector: Sendable {
    enum Outcome: Sendable, Equatable {
        case deliver
        case reject(APNsRejection)
        case silent
    }

    let faults: FaultInjection
    private let generator: PThreadMutex<SplitMix64>

    init(_ faults: FaultInjection) {
        self.faults = faults
        self.generator = PThreadMutex(SplitMix64(seed: faults.seed))
    }

    /// Whether any probabilistic fault is configured (when not, no number is drawn).
    var isActive: Bool {
        self.faults.tooManyRequestsRate + self.faults.internalServerErrorRate + self.faults.serviceUnavailableRate
            + self.faults.silentRate > 0
    }

    /// The outcome for the next acceptable request.
    func draw() -> Outcome {
        guard self.isActive else { return .deliver }
        let value = self.generator.withLock { $0.nextUnitInterval() }
        var threshold = self.faults.tooManyRequestsRate
        if value < threshold { return .reject(.tooManyRequests) }
        threshold += self.faults.internalServerErrorRate
        if value < threshold { return .reject(.internalServerError) }
        threshold += self.faults.serviceUnavailableRate
        if value < threshold { return .reject(.serviceUnavailable) }
        threshold += self.faults.silentRate
        if value < threshold { return .silent }
        return .deliver
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, and the same sequence on every platform.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { self.state = seed }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in [0, 1) with 53 random bits.
    mutating func nextUnitInterval() -> Double {
        Double(self.next() >> 11) / Double(UInt64(1) << 53)
    }
}
