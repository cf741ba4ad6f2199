#!/usr/bin/env bash
# A manager paused, not dead: under `acan train --processes 2` over nats:local, the active manager
# process is stopped with SIGSTOP until the standby has taken over (its lease lapsed), then
# continued with SIGCONT. Its first write after that waits for a renewal of its lease, which the
# server refuses (the lease cell's revision moved): it says it lost the lease and stands by again.
# The run completes with bitwise the weights of the in-process mem: run, and the version oracle at
# the server saw every version written once and in order, no copy (nothing written twice).
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

"$acan" train "$work/job.toml" --space nats:local --processes 2 --out "$work/run" \
  > "$work/train.log" 2>&1 &
train=$!
pids+=("$train")
active=""
for _ in $(seq 1 600); do
  active=$( (grep -o "manager m[01] holds the lease" "$work/train.log" 2>/dev/null || true) |
    head -1 | cut -d' ' -f2)
  [[ -n "$active" ]] && break
  sleep 0.05
done
[[ -n "$active" ]] || fail "no manager said it holds the lease"
standby=$([[ "$active" == m0 ]] && echo m1 || echo m0)
pid=$(ps --ppid "$train" -o pid=,args= | awk -v n="$active" '$0 ~ "--name " n " " {print $1}')
[[ -n "$pid" ]] || fail "no process of manager $active under the supervisor"
sleep 0.5  # some steps under it
kill -0 "$train" 2>/dev/null || fail "the run ended before the pause: a longer job"
kill -STOP "$pid"
paused=$pid
echo "paused manager $active (pid $pid)"
for _ in $(seq 1 600); do
  grep -q "manager $standby holds the lease" "$work/train.log" && break
  sleep 0.05
done
grep -q "manager $standby holds the lease" "$work/train.log" || fail "$standby never took over"
sleep 0.3  # the standby applies steps of its own
kill -CONT "$pid"
paused=""
echo "continued manager $active after $standby took over"
wait "$train" || fail "the run failed"
grep -q "manager $active: .*lost the lease to $standby" "$work/train.log" \
  || fail "the paused manager $active did not find its lease gone at its next write"
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
echo "pause: the paused manager's writes were refused by the lease revision; weights bitwise"
