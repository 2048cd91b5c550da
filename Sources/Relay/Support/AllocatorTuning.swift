#if canImport(Glibc)
import Glibc
#endif

/// Keeps glibc's allocator from handing freed memory back to the kernel after every request.
///
/// glibc trims a thread's heap once 128 KiB at its top are free: it gives the pages back (`madvise`), and the next
/// allocations fault them in again, zeroed. Below saturation the relay's threads go idle between requests, so its
/// heaps were trimmed and refilled again and again: at 400 pushes/s, keeping the pages lowered the relay's CPU per
/// push by a quarter (docs/BENCHMARKS.md). A threshold of 1 MiB per heap ends it; the cost is at most that much
/// memory kept free per heap.
enum AllocatorTuning {
    /// Free bytes a heap keeps at its top before glibc trims it.
    static let trimThreshold: Int32 = 1 << 20

    /// What ``apply(environment:)`` did.
    enum Decision: Equatable, Sendable {
        /// The threshold is set.
        case applied
        /// `GLIBC_TUNABLES` names a trim threshold: the operator's value stands.
        case leftToEnvironment
        /// Not glibc's allocator (another C library, or a sanitizer's runtime, which replaces `malloc`), or its
        /// `mallopt` refused the value: the allocator's own policy stands.
        case unavailable
    }

    /// Whether the environment already sets glibc's trim threshold (`glibc.malloc.trim_threshold` in
    /// `GLIBC_TUNABLES`, or the older `MALLOC_TRIM_THRESHOLD_`).
    static func environmentSetsThreshold(_ environment: [String: String]) -> Bool {
        if environment["MALLOC_TRIM_THRESHOLD_"] != nil { return true }
        return environment["GLIBC_TUNABLES"]?.contains("glibc.malloc.trim_threshold") ?? false
    }

    /// Whether a sanitizer's runtime, not glibc, serves `malloc` in this process (every sanitizer allocator exports
    /// `__sanitizer_get_allocated_size`).
    static var replacedAllocator: Bool {
        #if canImport(Glibc)
        return dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__sanitizer_get_allocated_size") != nil
        #else
        return false
        #endif
    }

    /// Sets the threshold for this process unless the environment sets one.
    static func apply(environment: [String: String]) -> Decision {
        if environmentSetsThreshold(environment) { return .leftToEnvironment }
        #if canImport(Glibc)
        // A sanitizer's runtime (ASan, TSan) serves `malloc` itself; glibc's threshold would not apply to it.
        if replacedAllocator { return .unavailable }
        // `mallopt` is declared in <malloc.h>, which Swift's Glibc module does not include; it is looked up instead.
        // M_TRIM_THRESHOLD is -1 there.
        typealias MallOpt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return .unavailable }
        let mallopt = unsafeBitCast(symbol, to: MallOpt.self)
        return mallopt(-1, trimThreshold) == 1 ? .applied : .unavailable
        #else
        return .unavailable
        #endif
    }
}
