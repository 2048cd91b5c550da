#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps a value alive so the optimiser cannot remove the work that produced it.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// This thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
///
/// CPU time, not wall time: the machines this runs on are shared (2 cores, often a load average far above 2), and
/// wall time would count the time other processes hold the core. Thread CPU time counts only the cycles spent in
/// this benchmark's own work (cache and frequency effects of other load remain).
@inline(__always)
func nowNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// One timed workload: a name and a body that runs the operation once.
struct Workload {
    let name: String
    let body: () -> Void
}

/// Timing settings: how many measured batches and how long each batch should take.
struct BenchSettings {
    var batches = 25
    var batchTargetNanoseconds: UInt64 = 20_000_000
    /// `--profile NAME N`: run only the workload whose id is NAME, N times, untimed (for callgrind / perf).
    var profile: (id: String, iterations: Int)? = nil
}

/// The measured cost of one workload.
struct Measurement {
    let name: String
    let iterationsPerBatch: Int
    let batchNanosecondsPerOp: [Double]

    var median: Double {
        let sorted = self.batchNanosecondsPerOp.sorted()
        let n = sorted.count
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }

    var minimum: Double { self.batchNanosecondsPerOp.min() ?? .nan }
}

/// Runs the workloads of one comparison round-robin, one batch of each in turn, so that every variant sees the same
/// machine load (this machine is shared; interleaving keeps the ratios honest even when absolute times drift).
///
/// Each workload first runs a calibration/warm-up phase that finds an iteration count giving a batch of about
/// `settings.batchTargetNanoseconds`; then `settings.batches` measured batches each. The result per workload is the
/// list of per-batch ns/op; callers report the median.
func measureInterleaved(_ section: String, _ workloads: [Workload], settings: BenchSettings) -> [Measurement] {
    if let profile = settings.profile {
        for workload in workloads where "\(section)/\(workload.name)" == profile.id {
            for _ in 0..<profile.iterations { workload.body() }
        }
        let ids = workloads.map { "\(section)/\($0.name)" }
        Swift.print(ids.joined(separator: "\n"))
        return workloads.map { Measurement(name: $0.name, iterationsPerBatch: 0, batchNanosecondsPerOp: [1]) }
    }
    var iterations: [Int] = []
    for workload in workloads {
        // Warm-up + calibration: double the count until one batch takes at least a quarter of the target.
        var count = 1
        while true {
            let start = nowNanoseconds()
            for _ in 0..<count { workload.body() }
            let elapsed = nowNanoseconds() - start
            if elapsed >= settings.batchTargetNanoseconds / 4 || count >= 1 << 24 {
                let perOp = Double(elapsed) / Double(count)
                iterations.append(max(1, Int(Double(settings.batchTargetNanoseconds) / max(perOp, 1))))
                break
            }
            count *= 2
        }
    }
    var samples = Array(repeating: [Double](), count: workloads.count)
    for _ in 0..<settings.batches {
        for (index, workload) in workloads.enumerated() {
            let count = iterations[index]
            let start = nowNanoseconds()
            for _ in 0..<count { workload.body() }
            let elapsed = nowNanoseconds() - start
            samples[index].append(Double(elapsed) / Double(count))
        }
    }
    return zip(workloads, zip(iterations, samples)).map {
        Measurement(name: $0.name, iterationsPerBatch: $1.0, batchNanosecondsPerOp: $1.1)
    }
}
