#!/usr/bin/env bash
# Across processes over NATS (nats:local: a private nats-server in the run directory, stopped by
# its PID when the run ends): at window 1, `acan train --processes N` with 1, 2 and 4 handler
# processes gives bitwise the weights of the in-process mem: run, for the data, tiles, pipeline
# and chain strategies, and the version oracle (fed by the supervisor from every put the server
# receives) finds each update applied exactly once; the in-process run itself is bitwise the
# reference trainer (RuntimeStrategyTest). Usage: processes.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source "$(dirname "$0")/small_job.sh"

# A fixed task size each: 0 (automatic) lets the controller pick it from measured speed, and a
# different partition is different arithmetic.
for spec in "data 2 0" "tiles 8 0" "pipeline 2 2" "chain 2 0"; do
  set -- $spec
  small_job "$work/$1.toml" "$1" "$2" "$3" 32
  "$acan" train "$work/$1.toml" --out "$work/$1-mem" --quiet
  want=$(weights_of "$work/$1-mem/summary.json")
  for n in 1 2 4; do
    out="$work/$1-p$n"
    timeout 300 "$acan" train "$work/$1.toml" --space nats:local --processes "$n" --out "$out" --quiet
    got=$(weights_of "$out/summary.json")
    echo "$1, $n handler processes: $got (mem: $want)"
    if [[ "$got" != "$want" ]]; then
      echo "FAIL: $1 with $n handler processes differs from the mem: run" >&2
      exit 1
    fi
    /usr/bin/python3 - "$out/summary.json" "$n" <<'PY'
import json, sys
s, n = json.load(open(sys.argv[1])), int(sys.argv[2])
assert s["processes"]["handlers"] == n, s["processes"]
# No fault was injected: a role process that died (a manager that stopped on an error while the
# standby finished, say) is a bug, however the run ended.
assert s["processes"]["handler_restarts"] == 0 and s["processes"]["manager_restarts"] == 0, \
    s["processes"]
assert s["updates"]["versions_applied"] > 0
# The version oracle, watching every put at the server from the supervisor: each shard's
# versions written once, in order, each a proposal that landed before it.
assert s["oracle"]["verdict"] == "ok", s["oracle"]
assert s["oracle"]["versions_written"] > 0 and s["oracle"]["tasks_seen"] > 0, s["oracle"]
# Every role process (2 managers, n handlers) reported its traffic on its way out.
t = s["traffic"]
assert t["processes_reporting"] == n + 2 and t["value_bytes_per_step"] > 0, t
PY
  done
done
# The chain's grain left to the manager (task_size 0): over NATS it picks the steps a task from
# measured compute and model moves, which changes what a step is but not the weights.
small_job "$work/chain0.toml" chain 0 0 32
timeout 300 "$acan" train "$work/chain0.toml" --space nats:local --processes 2 --out "$work/chain0" \
  --quiet
/usr/bin/python3 - "$work/chain0/summary.json" "$work/chain-mem/summary.json" <<'PY'
import json, sys
got, want = (json.load(open(p)) for p in sys.argv[1:3])
grain = got["grain"]
assert grain["steps_per_task"] >= 1 and grain["step_ms"] > 0 and grain["model_move_ms"] > 0, grain
assert got["weights_sha256"] == want["weights_sha256"], "chain with a chosen grain differs"
print(f"chain, grain chosen ({grain}): bitwise the mem: run")
PY
# metrics.csv from the manager process: a header and at least one row with handler columns.
/usr/bin/python3 - "$work/chain0/metrics.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and int(rows[-1]["step"]) > 0, rows[:1]
assert any(k.endswith("_tasks") and int(rows[-1][k]) > 0 for k in rows[-1]), rows[-1]
PY
echo "all strategies bitwise equal across 1, 2 and 4 handler processes"
