# Convenience targets. The README's two commands are ./scripts/demo.sh and ./scripts/test.sh.
FUZZ_SECONDS ?= 60
FUZZ_TARGET ?= FuzzFilter
FUZZ_BIN = Fuzz/.build/debug

# At most four tests at a time per core (scripts/test.sh says why).
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH ?= $(shell echo $$((4 * $$(nproc))))

.PHONY: test demo bench asan tsan fuzz fuzz-ci fuzz-build fuzz-check corpus soak

test:
	./scripts/test.sh

demo:
	./scripts/demo.sh

bench:
	swift run --package-path Benchmarks -c release e2ee-bench

asan:
	ASAN_OPTIONS=detect_leaks=0 swift test --sanitize=address --scratch-path .build-asan

tsan:
	Tools/sanitizers/check-suppressions.sh
	TSAN_OPTIONS="$$TSAN_OPTIONS suppressions=$(CURDIR)/Tools/sanitizers/tsan.supp" \
	  swift test --sanitize=thread --scratch-path .build-tsan

# SwiftPM turns `--sanitize=fuzzer --sanitize=address` into two `-sanitize=` flags in an order that changes from one
# run to the next, and swiftc keeps only the last: each build was either a fuzzer without coverage (blind) or one
# without ASan. One combined flag gives both; `--sanitize=fuzzer` stays so that SwiftPM links the targets without
# a `main` (libFuzzer has it). fuzz-check refuses a binary that lacks either.
FUZZ_BUILD = swift build --package-path Fuzz -c debug --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address
FUZZ_TARGETS = FuzzEnvelope FuzzFilter FuzzDeviceList

fuzz-build:
	for target in $(FUZZ_TARGETS); do $(FUZZ_BUILD) --product $$target || exit 1; done
	$(MAKE) fuzz-check

fuzz-check:
	@for target in $(FUZZ_TARGETS); do \
	  readelf -S $(FUZZ_BIN)/$$target | grep -q __sancov_cntrs || { \
	    echo "fuzz: error: $(FUZZ_BIN)/$$target has no coverage counters: libFuzzer would run blind. Rebuild it with: $(FUZZ_BUILD) --product $$target" >&2; exit 1; }; \
	  nm $(FUZZ_BIN)/$$target | grep -q asan.module_ctor || { \
	    echo "fuzz: error: $(FUZZ_BIN)/$$target has no AddressSanitizer instrumentation (only its runtime, or nothing). Rebuild it with: $(FUZZ_BUILD) --product $$target" >&2; exit 1; }; \
	  echo "fuzz: $$target has coverage counters and AddressSanitizer"; \
	done

corpus:
	python3 scripts/fuzz-corpus.py Fuzz/corpus

# A campaign of FUZZ_SECONDS on FUZZ_TARGET; crashers are written to Fuzz/crashers/ (turn them into fixtures under
# Fixtures/fuzz-regressions/).
fuzz: fuzz-build corpus
	mkdir -p Fuzz/crashers Fuzz/work-$(FUZZ_TARGET)
	$(FUZZ_BIN)/$(FUZZ_TARGET) -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -artifact_prefix=Fuzz/crashers/ \
		Fuzz/work-$(FUZZ_TARGET) Fuzz/corpus Fixtures/fuzz-regressions

# The short bounded run CI does: every target, FUZZ_SECONDS each.
fuzz-ci: fuzz-build corpus
	mkdir -p Fuzz/crashers Fuzz/work-FuzzEnvelope Fuzz/work-FuzzFilter Fuzz/work-FuzzDeviceList
	$(FUZZ_BIN)/FuzzEnvelope -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -artifact_prefix=Fuzz/crashers/ Fuzz/work-FuzzEnvelope Fuzz/corpus Fixtures/fuzz-regressions
	$(FUZZ_BIN)/FuzzFilter -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -artifact_prefix=Fuzz/crashers/ Fuzz/work-FuzzFilter Fuzz/corpus Fixtures/fuzz-regressions
	$(FUZZ_BIN)/FuzzDeviceList -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -artifact_prefix=Fuzz/crashers/ Fuzz/work-FuzzDeviceList Fuzz/corpus Fixtures/fuzz-regressions
