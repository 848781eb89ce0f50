#!/usr/bin/env bash
# The determinism proof of docs/testing.md: the whole `npm test` N times in a row (default 3) while
# a CPU burner keeps every core busy. Stops at the first failure, with its exit code.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
node scripts/cpu-burner.mjs $((runs * 20 * 60)) &
burner=$!
trap 'kill $burner 2>/dev/null' EXIT
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  npm test > "/tmp/anchord-test-under-load-$i.log" 2>&1
  rc=$?
  echo "run $i/$runs: exit $rc in $(( $(date +%s) - start )) s (log /tmp/anchord-test-under-load-$i.log)"
  [ "$rc" -eq 0 ] || exit "$rc"
done
