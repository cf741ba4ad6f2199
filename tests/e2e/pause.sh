#!/usr/bin/env bash
# A manager paused, not dead, with a write on its way: under `acan train --processes 2` over
# nats:local the active manager stops itself (SIGSTOP, the ACAN_TEST_STOP_AT hook) inside a fenced
# put of a parameter version or its state, after its lease was checked and before the put is sent.
# It stays stopped until the standby has taken over (the lease lapsed) and applied steps of its
# own, then is continued with SIGCONT: the put it had on its way goes out then, and the server
# refuses it (the lease cell's revision moved), the manager says so and stands by again. The run
# completes with bitwise the weights of the in-process mem: run, and the version oracle at the
# server saw every version written once and in order: nothing written twice.
# Usage: pause.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
work=$(mktemp -d)
pids=()
source "$(dirname "$0")/small_job.sh"
paused=""
trap '[[ -n "$paused" ]] && kill -CONT "$paused" 2>/dev/null; stop_started' EXIT
fail() { echo "FAIL: $*" >&2; tail -n 30 "$work/train.log" >&2 || true; exit 1; }

small_job "$work/job.toml" data 2 0 4000  # 1000 steps
"$acan" train "$work/job.toml" --out "$work/mem" --quiet
want=$(weights_of "$work/mem/summary.json")

# The 150th fenced put of whichever manager gets there first (the active one: a standby writes
# none), once: the successor passes the point without stopping.
ACAN_TEST_KILL_MANAGER=any ACAN_TEST_STOP_AT=fenced:150 ACAN_TEST_KILL_ONCE="$work/stopped" \
  "$acan" train "$work/job.toml" --space nats:local --processes 2 --out "$work/run" \
  > "$work/train.log" 2>&1 &
train=$!
pids+=("$train")
pid=""
for _ in $(seq 1 1200); do
  pid=$(sed -n 's/.*ACAN_TEST_STOP_AT: stopped at fenced:150 (pid \([0-9]*\)).*/\1/p' \
    "$work/train.log" 2>/dev/null | head -1)
  [[ -n "$pid" ]] && break
  kill -0 "$train" 2>/dev/null || fail "the run ended before a manager reached its 150th fenced put"
  sleep 0.05
done
[[ -n "$pid" ]] || fail "no manager stopped at its 150th fenced put"
paused=$pid
for _ in $(seq 1 100); do
  [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == T ]] && break
  sleep 0.02
done
[[ "$(awk '{print $3}' "/proc/$pid/stat")" == T ]] || fail "process $pid is not stopped"
active=$(ps -o args= -p "$pid" | grep -o -- "--name m[01]" | cut -d' ' -f2)
[[ -n "$active" ]] || fail "process $pid is not a manager of the supervisor"
standby=$([[ "$active" == m0 ]] && echo m1 || echo m0)
echo "manager $active (pid $pid) stopped inside a fenced put"
for _ in $(seq 1 600); do
  grep -q "manager $standby holds the lease" "$work/train.log" && break
  sleep 0.05
done
grep -q "manager $standby holds the lease" "$work/train.log" || fail "$standby never took over"
sleep 0.5  # the standby applies steps of its own
kill -0 "$train" 2>/dev/null || fail "the run ended while $active was stopped: a longer job"
kill -CONT "$pid"
paused=""
echo "continued manager $active after $standby took over"
wait "$train" || fail "the run failed"
grep -q "manager $active: .*lost the lease to $standby: the space refused its write (fenced put" \
  "$work/train.log" || fail "the paused manager's put on its way was not refused by the server"
got=$(weights_of "$work/run/summary.json")
[[ "$got" == "$want" ]] || fail "weights $got differ from the mem: run's $want"
/usr/bin/python3 - "$work/run/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
o = s["oracle"]
assert o["verdict"] == "ok", o
assert o["version_copies"] == 0, f"a version was written more than once: {o}"
assert s["manager_takeovers"] >= 1, s["manager_takeovers"]
print(f"{s['steps']} steps, {s['manager_takeovers']} take-over(s); oracle ok, "
      f"{o['versions_written']} versions each written once")
PY
grep "lost the lease" "$work/train.log" | head -2
echo "pause: the write the paused manager had on its way was refused by the server; weights bitwise"
