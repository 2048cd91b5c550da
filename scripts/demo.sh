#!/usr/bin/env bash
# The main job: installs what is missing, builds release binaries and runs the end-to-end demo
# (e2ee-send submitting to e2ee-relay, which delivers over HTTP/2 to e2ee-gateway on loopback with TLS, and
# e2ee-filter consuming the gateway's spool).
# Exits non-zero if any decision differs from the expected one.
# E2EE_BUILD_DIR, if set, is SwiftPM's --scratch-path (a release build kept apart from the debug one in .build).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

# Release binaries are linked with the Swift runtime and Foundation inside (--static-swift-stdlib), as Swift server
# deployments on Linux are: `e2ee-filter once` starts about 3 ms sooner and `run` peaks about 3 MB lower than with
# the runtime as shared libraries (docs/BENCHMARKS.md, 2026-11-26). The README's figures for the e2ee-* processes are of these.
flags=(-c release --static-swift-stdlib)
if [[ -n "${E2EE_BUILD_DIR:-}" ]]; then flags+=(--scratch-path "$E2EE_BUILD_DIR"); fi
echo "== build (release) ==" >&2
for product in e2ee-send e2ee-filter e2ee-gateway e2ee-relay; do
  swift build "${flags[@]}" --product "$product" >&2
done
exec python3 scripts/run-demo.py --bin "$(swift build "${flags[@]}" --show-bin-path)"
