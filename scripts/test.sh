#!/usr/bin/env bash
# The test command: installs what is missing, builds everything (no warnings allowed in our code), runs every test
# (RFC 9180 + Wycheproof + project vectors, gateway, sender, filter), the independent Python implementation
# of docs/PROTOCOL.md against Fixtures/, and a short bounded fuzzing run when the fuzzers are built.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

echo "== format (swift format lint --strict) =="
swift format lint --strict -r Sources Tests Fuzz/Sources Package.swift

echo "== build (debug, tests) =="
swift build --build-tests

# Swift Testing starts every test at once unless told otherwise: with ~500 tests, many of them starting servers and
# child processes, a 2-core machine ran about 150 at a time and their own deadlines (the PostgreSQL tests' 10-second
# "does the server answer" check) ran out while the server sat idle. Four tests per core keeps the processes busy and
# every deadline honest; a caller may set its own width.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-$((4 * $(nproc)))}"

echo "== swift test (with a throwaway PostgreSQL for the relay's PostgreSQL tests; $SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH tests at a time) =="
./scripts/with-postgres.sh swift test --skip-build --parallel

echo "== independent implementation of docs/PROTOCOL.md vs Fixtures/ =="
if [ -f Tools/independent/check_vectors.py ]; then
  if ! python3 -c "import cryptography" 2>/dev/null; then
    python3 -m pip install --quiet cryptography || { echo "test: error: pip install cryptography failed" >&2; exit 69; }
  fi
  # ML-KEM-768 for the X-Wing suite (pure Python, deterministic encapsulation for the vectors).
  if ! python3 -c "import kyber_py" 2>/dev/null; then
    python3 -m pip install --quiet kyber-py || {
      echo "test: error: pip install kyber-py failed (the X-Wing checks need it: pip install kyber-py)" >&2; exit 69; }
  fi
  python3 Tools/independent/check_vectors.py
  python3 Tools/independent/xwing_vectors.py check
  # X-Wing pushes the Swift side seals now, with fresh randomness, opened by the independent implementation.
  fresh="$(mktemp)"
  trap 'rm -f "$fresh"' EXIT
  swift run --skip-build e2ee-vectors fresh-xwing > "$fresh"
  python3 Tools/independent/xwing_vectors.py open-fresh "$fresh"
fi
