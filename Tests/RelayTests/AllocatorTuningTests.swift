import Testing

@testable import Relay

/// `e2ee-relay serve` keeps glibc from trimming its heaps after each request, unless the operator set the threshold.
@Suite("Relay allocator tuning: the trim threshold, or the environment's")
struct AllocatorTuningTests {
    @Test("a threshold in the environment is the operator's; anything else is not one")
    func environment() {
        #expect(AllocatorTuning.environmentSetsThreshold(["GLIBC_TUNABLES": "glibc.malloc.trim_threshold=4096"]))
        #expect(
            AllocatorTuning.environmentSetsThreshold([
                "GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=1"
            ])
        )
        #expect(AllocatorTuning.environmentSetsThreshold(["MALLOC_TRIM_THRESHOLD_": "65536"]))
        #expect(!AllocatorTuning.environmentSetsThreshold(["GLIBC_TUNABLES": "glibc.malloc.arena_max=2"]))
        #expect(!AllocatorTuning.environmentSetsThreshold(["MALLOC_ARENA_MAX": "2"]))
        #expect(!AllocatorTuning.environmentSetsThreshold([:]))
        #expect(
            AllocatorTuning.apply(environment: ["GLIBC_TUNABLES": "glibc.malloc.trim_threshold=4096"])
                == .leftToEnvironment
        )
    }

    @Test("on glibc the threshold is set (mallopt found and accepting it)")
    func applied() {
        #if os(Linux)
        #expect(AllocatorTuning.apply(environment: [:]) == .applied)
        #else
        #expect(AllocatorTuning.apply(environment: [:]) == .unavailable)
        #endif
    }
}
