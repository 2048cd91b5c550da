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

    @Test("on glibc's allocator the threshold is set (mallopt found and accepting it); under a sanitizer it is not")
    func applied() {
        #if os(Linux)
        // `make asan` and `make tsan` run this suite with a sanitizer's allocator in place of glibc's.
        let expected: AllocatorTuning.Decision = AllocatorTuning.replacedAllocator ? .unavailable : .applied
        #expect(AllocatorTuning.apply(environment: [:]) == expected)
        #else
        #expect(AllocatorTuning.apply(environment: [:]) == .unavailable)
        #endif
    }
}
