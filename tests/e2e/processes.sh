#!/usr/bin/env bash
# Across processes over NATS (nats:local: a private nats-server in the run directory, stopped by
# its PID when the run ends): at window 1, `acan train --processes N` with 1, 2 and 4 handler
# processes gives bitwise the weights of the in-process mem: run, for the data, tiles, pipeline
# and chain strategies; the in-process run itself is bitwise the reference trainer
# (RuntimeStrategyTest). Usage: processes.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

job() {  # job STRATEGY TASK_SIZE STAGES: a small MLP, 8 steps of 4 rows
  cat > "$work/$1.toml" <<TOML
[model]
layers = [12, 16, 8, 3]
activation = "tanh"
loss = "mse"
init = "xavier_uniform"
[data]
source = "synthetic"
samples = 32
shuffle = true
[train]
epochs = 1
batch = 4
lr = 0.05
seed = 7
[partition]
strategy = "$1"
task_size = $2
stages = $3
[runtime]
handlers = 2
window = 1
space = "mem:"
TOML
}
hash() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["weights_sha256"])' "$1"; }

# A fixed task size each: 0 (automatic) lets the controller pick it from measured speed, and a
# different partition is different arithmetic.
for spec in "data 2 0" "tiles 8 0" "pipeline 2 2" "chain 2 0"; do
  set -- $spec
  job "$1" "$2" "$3"
  "$acan" train "$work/$1.toml" --out "$work/$1-mem" --quiet
  want=$(hash "$work/$1-mem/summary.json")
  for n in 1 2 4; do
    out="$work/$1-p$n"
    timeout 300 "$acan" train "$work/$1.toml" --space nats:local --processes "$n" --out "$out" --quiet
    got=$(hash "$out/summary.json")
    echo "$1, $n handler processes: $got (mem: $want)"
    if [[ "$got" != "$want" ]]; then
      echo "FAIL: $1 with $n handler processes differs from the mem: run" >&2
      exit 1
    fi
    /usr/bin/python3 - "$out/summary.json" "$n" <<'PY'
import json, sys
s, n = json.load(open(sys.argv[1])), int(sys.argv[2])
assert s["processes"]["handlers"] == n, s["processes"]
assert s["updates"]["versions_applied"] > 0
PY
  done
done
echo "all strategies bitwise equal across 1, 2 and 4 handler processes"
