#!/usr/bin/env bash
# What the network costs, measured in one run (docs/benchmarks.md, "Across processes"):
#  1. space put+take pairs over a private nats-server against raw libnats (build/bench/nats_compare);
#  2. Fashion-MNIST, 6,400 rows, one epoch (50 steps of 128), in process on mem: with 2 handler
#     threads against `--processes 2` over nats:local, for the data strategy (the flagship's) and
#     for the chain strategy with 10 steps a task; the weights must be bitwise equal;
#  3. the design note's feasibility job over nats:local with 4 handler processes.
# Usage: bench/nats_compare.sh [BUILD_DIR]   (needs dataset-fashion-mnist for 2)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
acan=$build/src/cli/acan
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
field() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d=d[k]
print(d)' "$1" "$2"; }

echo "== space operations"
"$build/bench/nats_compare" --rounds 5 --seconds 1

echo "== Fashion-MNIST, 6400 rows, 1 epoch"
sed -e 's/^limit = 0 .*/limit = 6400/' -e 's/^epochs = 20/epochs = 1/' examples/fashion-mnist.toml \
  > "$work/data.toml"
sed -e 's/^strategy = "data"/strategy = "chain"/' -e 's/^task_size = 64 .*/task_size = 10/' \
  "$work/data.toml" > "$work/chain.toml"
for strategy in data chain; do
  "$acan" train "$work/$strategy.toml" --out "$work/$strategy-mem" --quiet
  "$acan" train "$work/$strategy.toml" --space nats:local --processes 2 --out "$work/$strategy-nats" \
    --quiet > /dev/null
  mem_s=$(field "$work/$strategy-mem/summary.json" wall_s)
  nats_s=$(field "$work/$strategy-nats/summary.json" wall_s)
  same=$([[ $(field "$work/$strategy-mem/summary.json" weights_sha256) == \
           $(field "$work/$strategy-nats/summary.json" weights_sha256) ]] && echo yes || echo NO)
  echo "$strategy: mem: 2 threads ${mem_s} s, nats:local 2 processes ${nats_s} s," \
       "ratio $(/usr/bin/python3 -c "print(f'{$nats_s/$mem_s:.1f}')"), bitwise equal: $same," \
       "test accuracy $(field "$work/$strategy-nats/summary.json" test_accuracy)," \
       "value bytes per step $(field "$work/$strategy-mem/summary.json" space.bytes_moved_per_step)"
done

echo "== feasibility job, 4 handler processes over nats:local"
"$acan" train examples/feasibility.toml --space nats:local --processes 4 --out "$work/feas" --quiet \
  > /dev/null
"$acan" train examples/feasibility.toml --out "$work/feas-mem" --quiet
echo "loss $(field "$work/feas-mem/summary.json" initial_loss) -> final epoch" \
     "$(field "$work/feas/summary.json" final_epoch_loss), retransmitted" \
     "$(field "$work/feas/summary.json" tasks.retransmitted), $(field "$work/feas/summary.json" wall_s) s" \
     "(mem: $(field "$work/feas-mem/summary.json" wall_s) s), bitwise equal:" \
     "$([[ $(field "$work/feas/summary.json" weights_sha256) == $(field "$work/feas-mem/summary.json" weights_sha256) ]] && echo yes || echo NO)"
