# Convenience targets. The README's two commands are ./scripts/demo.sh and ./scripts/test.sh.
FUZZ_SECONDS ?= 60
FUZZ_TARGET ?= FuzzFilter
FUZZ_BIN = Fuzz/.build/debug

.PHONY: test demo bench asan tsan fuzz fuzz-ci fuzz-build corpus soak

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

fuzz-build:
	swift build --package-path Fuzz -c debug --sanitize=fuzzer --sanitize=address --product FuzzEnvelope
	swift build --package-path Fuzz -c debug --sanitize=fuzzer --sanitize=address --product FuzzFilter
	swift build --package-path Fuzz -c debug --sanitize=fuzzer --sanitize=address --product FuzzDeviceList

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
