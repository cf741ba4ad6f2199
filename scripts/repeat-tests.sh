#!/usr/bin/env bash
# Runs a ctest selection N times in a row and reports failures, hangs (ctest timeouts) and the
# slowest run of each test. With --load, a busy loop is pinned to every CPU meanwhile (the
# machine as a busy CI runner sees it). Used to show that the chaos and runtime tests hold under
# ThreadSanitizer on any machine:
#   scripts/repeat-tests.sh build-tsan 20 '^(RuntimeTest|ChaosTest|Strategies/)' [--load]
set -euo pipefail
dir=$1 runs=$2 regex=$3 load=${4:-}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
if [ "$load" = "--load" ]; then
  for cpu in $(seq 0 $(($(nproc) - 1))); do
    taskset -c "$cpu" sh -c 'while :; do :; done' & pids+=($!)
  done
fi
log=$(mktemp)
fails=0 hangs=0
for i in $(seq 1 "$runs"); do
  if ! TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
      ctest --test-dir "$dir" --no-tests=error --output-on-failure --timeout 120 -R "$regex" \
        >"$log.run" 2>&1; then
    fails=$((fails + 1))
    grep -c "Timeout" "$log.run" >/dev/null && hangs=$((hangs + $(grep -c '\*\*\*Timeout' "$log.run" || true)))
    cp "$log.run" "$log.fail$i"
    echo "run $i: FAILED (log $log.fail$i)"
  fi
  grep -E '^ *[0-9]+/[0-9]+ Test' "$log.run" >>"$log"
done
echo "runs $runs${load:+ under load}: failed runs $fails, timed-out tests $hangs"
echo "slowest run of each test (s):"
sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+).* ([0-9.]+) sec$/\2 \1/' "$log" |
  sort -k2,2 -k1,1nr | awk '!seen[$2]++' | sort -nr | head -40
