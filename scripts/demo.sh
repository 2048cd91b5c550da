#!/usr/bin/env bash
# The main job: installs what is missing, builds release binaries and runs the end-to-end demo
# (e2ee-send submitting to e2ee-relay, which delivers over HTTP/2 to e2ee-gateway on loopback with TLS, and
# e2ee-filter consuming the gateway's spool).
# Exits non-zero if any decision differs from the expected one.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

echo "== build (release) ==" >&2
swift build -c release --product e2ee-send >&2
swift build -c release --product e2ee-filter >&2
swift build -c release --product e2ee-gateway >&2
swift build -c release --product e2ee-relay >&2
exec python3 scripts/run-demo.py --bin "$(swift build -c release --show-bin-path)"
