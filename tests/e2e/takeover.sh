#!/usr/bin/env bash
# Manager take-over across processes, with no supervisor: a nats-server on loopback (started and
# stopped here by its PID), two `acan manager` processes (m0, m1) and two `acan handler`
# processes. The manager that says it holds the lease is SIGKILLed and not started again: the
# other, standing by, takes over once the lease lapses and finishes the job, with bitwise the
# weights of the in-process mem: run and one take-over counted. (Under `acan train --processes`
# a killed manager is started again at once and may retake its own lapsed lease first:
# tests/e2e/processes.sh and membership.sh run that path.)
# Usage: takeover.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
work=$(mktemp -d)
pids=()  # what this test starts: stopped by PID at exit (small_job.sh)
source "$(dirname "$0")/small_job.sh"
trap stop_started EXIT
fail() { echo "FAIL: $*" >&2; tail -n 20 "$work"/*.log >&2 || true; exit 1; }

small_job "$work/job.toml" data 2 0 2000  # 500 steps, far longer than the take-over
"$acan" train "$work/job.toml" --out "$work/mem" --quiet
want=$(weights_of "$work/mem/summary.json")

start_nats -1 || fail "nats-server did not report its port"

declare -A manager
for name in m0 m1; do
  "$acan" manager "$work/job.toml" --space "$url" --name "$name" --out "$work/run" \
    > "$work/$name.log" 2>&1 &
  manager[$name]=$!
  pids+=("$!")
done
for id in 0 1; do
  "$acan" handler --space "$url" --job job --id "$id" > "$work/h$id.log" 2>&1 &
  pids+=("$!")
done
active=""
for _ in $(seq 1 300); do
  for name in m0 m1; do
    grep -q "manager $name holds the lease" "$work/$name.log" && active=$name
  done
  [[ -n "$active" ]] && break
  sleep 0.05
done
[[ -n "$active" ]] || fail "no manager said it holds the lease"
standby=$([[ "$active" == m0 ]] && echo m1 || echo m0)
sleep 0.5  # some steps under the first manager
kill -KILL "${manager[$active]}"
echo "killed the active manager $active (pid ${manager[$active]}); $standby stands by"
wait "${manager[$standby]}" || fail "the standby $standby failed"
grep -q "manager $standby holds the lease" "$work/$standby.log" || fail "$standby never took the lease"
/usr/bin/python3 - "$work/run/summary.json" "$standby" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["manager"] == sys.argv[2], s["manager"]
assert s["manager_takeovers"] == 1, s["manager_takeovers"]
print(f"{s['manager']} finished the job after 1 take-over; retransmitted "
      f"{s['tasks']['retransmitted']} {s['tasks']['retransmit_reasons']}")
PY
got=$(weights_of "$work/run/summary.json")
[[ "$got" == "$want" ]] || fail "weights $got differ from the mem: run's $want"
echo "takeover: the standby process took over from a SIGKILLed manager; weights bitwise the mem: run's"
