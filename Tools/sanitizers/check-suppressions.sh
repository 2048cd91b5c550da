#!/usr/bin/env bash
# Checks Tools/sanitizers/tsan.supp against two small programs built with -sanitize=thread (docs/SANITIZERS.md,
# finding 6): the suppression must silence the Swift runtime's continuation false positive and must leave a real
# race reported. If the toolchain stops producing the false positive, it says so: the suppression can then go.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
swiftc -parse-as-library -sanitize=thread -g "$here/continuation-resumed-early.swift" -o "$work/early"
swiftc -sanitize=thread -g "$here/real-race.swift" -o "$work/race"

# reports PROGRAM [SUPPRESSIONS]: how many TSan report files PROGRAM leaves.
reports() {
  local logs="$work/logs-$RANDOM"
  mkdir "$logs"
  TSAN_OPTIONS="halt_on_error=0 log_path=$logs/tsan${2:+ suppressions=$2}" "$1" > /dev/null || true
  ls "$logs" | wc -l
}

if [ "$(reports "$work/early" "$here/tsan.supp")" -ne 0 ]; then
  echo "tsan-suppressions: error: tsan.supp did not silence the continuation false positive" >&2
  exit 1
fi
if [ "$(reports "$work/race" "$here/tsan.supp")" -eq 0 ]; then
  echo "tsan-suppressions: error: tsan.supp silenced a real data race: it is too broad" >&2
  exit 1
fi
if [ "$(reports "$work/early")" -eq 0 ]; then
  echo "tsan-suppressions: note: this toolchain no longer reports the continuation false positive;" \
    "the suppression in tsan.supp may be removed (docs/SANITIZERS.md, finding 6)"
fi
echo "tsan-suppressions: ok (the false positive is silenced, a real race is still reported)"
