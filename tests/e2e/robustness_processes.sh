#!/usr/bin/env bash
# Real faults (`acan experiment robustness --processes 3 --quick`): over nats:local, handler
# processes and the active manager are SIGKILLed at moments drawn from the seed in every interval
# (p = 1, the interval scaled to the measured step) and started again by the supervisor, at
# speeds 1:5:10. Asserted here, every run: kills of both roles happened and lost tasks, the weights
# are bitwise those of the fault-free process run and of the in-process mem: run (window 1), the
# oracle at the server saw each version written once and in order, 0 gaps and 0 repeats. With
# --claims (the experiment test, run alone: its figures are compute and recovery), the
# experiment's own claims too (experiment_claims.py: extra compute, recovery against the lost
# task's class in the fault-free run, each with the baseline it is judged against): its exit code
# is 0, every claim holds (but goals_not_met.txt's).
# Usage: robustness_processes.sh ACAN_BINARY [--claims]
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY [--claims]}
claims=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
set +e
timeout 540 "$acan" experiment robustness --processes 3 --quick --out "$work/out" \
  > "$work/log" 2>&1
rc=$?
set -e
cat "$work/log"
# (The log's last lines follow the FAIL line: CI's output shows the lines after it.)
[[ -f "$work/out/experiment.json" ]] ||
  { echo "FAIL: no experiment.json (exit $rc); the log ends:" >&2; tail -n 8 "$work/log" >&2; exit 1; }
/usr/bin/python3 - "$work/out" <<'PY'
import json, sys
out = sys.argv[1]
e = json.load(open(f"{out}/experiment.json"))
s = json.load(open(f"{out}/summary.json"))
mem = json.load(open(f"{out}/mem/summary.json"))
clean = json.load(open(f"{out}/fault-free/summary.json"))
c = s["crashes"]
assert c["by"] == "SIGKILL" and c["handlers"] > 0 and c["manager"] > 0, c
assert c["lost_tasks"] > 0, f"no kill hit a task in hand: the run proved little ({c})"
assert s["weights_sha256"] == mem["weights_sha256"] == clean["weights_sha256"], "weights differ"
assert s["oracle"]["verdict"] == "ok", s["oracle"]
assert s["updates"]["gaps"] == 0 and s["updates"]["repeats"] == 0, s["updates"]
assert s["final_epoch_loss"] < mem["initial_loss"], (s["final_epoch_loss"], mem["initial_loss"])
print(f"kills: {c['handlers']} handler, {c['manager']} manager, {c['lost_tasks']} tasks lost "
      f"(seed {c['seed']}, every {c['interval_s']:.2f} s); bitwise equal, oracle ok; "
      f"extra compute {e['extra_compute_ratio']:.3f}, claims hold: {e['claims_hold']}")
PY
if [[ "$claims" == --claims ]]; then
  /usr/bin/python3 "$here/experiment_claims.py" "$work/out/experiment.json" "$rc"
fi
# The audit log of a run whose processes were killed: the chain holds and ends with its model.
"$acan" audit verify "$work/out/audit.jsonl" --model "$work/out/model.safetensors"
