#!/usr/bin/env bash
# Ctrl-C on `acan train --processes` (SIGINT to the whole foreground process group, as a
# terminal sends it): every process leaves cleanly through the private server, which is stopped
# after them; the run exits 130 within seconds and leaves no process behind. Usage:
# interrupt.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
work=$(mktemp -d)
pids=()
source "$(dirname "$0")/small_job.sh"
trap stop_started EXIT
small_job "$work/job.toml" data 2 0 4000 3
setsid "$acan" train "$work/job.toml" --space nats:local --processes 2 --out "$work/out" \
  > "$work/log" 2>&1 &
run=$!
pids+=("$run")
for _ in $(seq 1 300); do
  grep -q "holds the lease" "$work/log" 2>/dev/null && break
  sleep 0.1
done
grep -q "holds the lease" "$work/log" || { echo "FAIL: the run did not start: $(cat "$work/log")" >&2; exit 1; }
sleep 1
members=$(pgrep -g "$run" | wc -l)
echo "the run's process group: $members processes; SIGINT to all of them"
kill -INT -- "-$run"
rc=0
for _ in $(seq 1 300); do
  kill -0 "$run" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$run" 2>/dev/null; then
  echo "FAIL: the run did not end within 30 s of Ctrl-C: $(tail -5 "$work/log")" >&2
  pgrep -g "$run" -a >&2 || true
  kill -KILL -- "-$run" 2>/dev/null || true
  exit 1
fi
wait "$run" || rc=$?
echo "exit $rc: $(grep -m1 'stopping' "$work/log")"
[[ $rc -eq 130 ]] || { echo "FAIL: exit $rc, not 130: $(tail -5 "$work/log")" >&2; exit 1; }
sleep 0.5
left=$(pgrep -g "$run" | wc -l || true)
[[ $left -eq 0 ]] || { echo "FAIL: $left processes of the run are left" >&2; exit 1; }
# No server left either (it had a group of its own): none started from this run's directory.
if pgrep -f "$work/out/nats" > /dev/null; then
  echo "FAIL: the run's nats-server is still running" >&2
  exit 1
fi
echo PASS
