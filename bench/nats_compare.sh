#!/usr/bin/env bash
# What the network costs, measured in one run (docs/benchmarks.md, "Across processes"):
#  1. space put+take pairs over a private nats-server against raw libnats (build/bench/nats_compare);
#  2. Fashion-MNIST, one epoch (469 steps of 128), in process on mem: with 2 handler threads
#     against `--processes 2` over nats:local, for the data strategy (the flagship's) and for the
#     chain strategy with the grain its manager chooses; the weights must be bitwise equal;
#  3. the bytes each strategy moves through the server a step, across processes;
#  4. the design note's feasibility job over nats:local with 4 handler processes;
#  5. the CNN (examples/fashion-cnn.toml), one epoch, chain with the grain its manager chooses,
#     in process against --processes 2 over nats:local, and against its bytes+FLOPs bound.
# Usage: bench/nats_compare.sh [BUILD_DIR] [cnn]   (needs dataset-fashion-mnist for 2 and 5;
# `cnn` runs part 5 alone, with part 1's 1 MiB rate measured first)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
only=${2:-}
acan=$build/src/cli/acan
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
field() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d=d[k]
print(d)' "$1" "$2"; }

echo "== space operations"
"$build/bench/nats_compare" --rounds 5 --seconds 1 | tee "$work/space.txt"
# Raw libnats' 1 MiB put+take pairs a second: the rate the Fashion run's bound is taken at.
raw_mib_pairs=$(sed -n 's/^1048576 B values: raw libnats \([0-9.]*\) pairs.*/\1/p' "$work/space.txt")

# The bound a chain run's bytes and FLOPs imply: the compute (the mem: run's) plus, per task, the
# model (weights and velocities) across the wire four times (handler read and proposal, manager
# read and version) at raw libnats' 1 MiB rate measured above (a pair is two crossings).
# chain_bound MEM_SUMMARY NATS_SUMMARY JOB_TOML RAW_MIB_PAIRS NAME
chain_bound() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys, tomllib
mem, nats = (json.load(open(p)) for p in sys.argv[1:3])
job = tomllib.load(open(sys.argv[3], "rb"))
raw_mib_pairs, name = float(sys.argv[4]), sys.argv[5]
model = job["model"]
if "layer" in model:  # a list: each conv2d's and linear's weight and bias
    floats = 0
    for l in model["layer"]:
        if l["type"] == "conv2d":
            k = l["kernel_size"]
            kh, kw = (k, k) if isinstance(k, int) else k
            floats += l["out_channels"] * (l["in_channels"] * kh * kw + l.get("bias", True))
        elif l["type"] == "linear":
            floats += l["out_features"] * (l["in_features"] + l.get("bias", True))
else:
    layers = model["layers"]
    floats = sum((a + 1) * b for a, b in zip(layers, layers[1:]))
model_mib = floats * 4 * (2 if job["train"].get("momentum", 0) else 1) / 2**20
grain = nats["grain"]
tasks = nats["tasks"]["completed"]
crossing_s = 1 / (2 * raw_mib_pairs)
bound = mem["wall_s"] + tasks * 4 * model_mib * crossing_s
print(f"{name}: mem: 2 threads {mem['wall_s']:.2f} s; nats:local 2 processes: train "
      f"{nats['train_s']:.2f} s (whole run {nats['wall_s']:.2f} s), ratio "
      f"{nats['train_s'] / mem['wall_s']:.2f}x; bitwise equal: "
      f"{'yes' if mem['weights_sha256'] == nats['weights_sha256'] else 'NO'}; test accuracy "
      f"{nats.get('test_accuracy')}; retransmitted {nats['tasks']['retransmitted']}; grain {grain['steps_per_task']} steps a task (a step "
      f"{grain['step_ms']:.2f} ms, the model moved once each way {grain['model_move_ms']:.1f} ms)")
print(f"  bound {bound:.2f} s ({tasks} tasks of a {model_mib:.2f} MiB model, "
      f"{crossing_s * 1e3:.2f} ms a MiB crossing); train time {nats['train_s'] / bound:.2f}x it")
PY
}

cnn_part() {
  echo "== the CNN (examples/fashion-cnn.toml), 60000 rows, 1 epoch (938 steps of 64), chain"
  sed -e 's/^epochs = 12/epochs = 1/' -e 's/^strategy = "data"/strategy = "chain"/' \
    -e 's/^task_size = 32 .*/task_size = 0/' examples/fashion-cnn.toml > "$work/cnn.toml"
  "$acan" train "$work/cnn.toml" --out "$work/cnn-mem" --quiet > /dev/null
  "$acan" train "$work/cnn.toml" --space nats:local --processes 2 --out "$work/cnn-nats" \
    --quiet > /dev/null
  chain_bound "$work/cnn-mem/summary.json" "$work/cnn-nats/summary.json" "$work/cnn.toml" \
    "$raw_mib_pairs" "cnn chain"
}
if [[ $only == cnn ]]; then
  cnn_part
  exit 0
fi

echo "== Fashion-MNIST, 60000 rows, 1 epoch (469 steps of 128)"
# data: the flagship's strategy (2 micro-batches a step); chain: whole steps on one handler, the
# grain (steps a task) chosen by the manager from measured compute and model moves (task_size 0).
sed -e 's/^epochs = 20/epochs = 1/' examples/fashion-mnist.toml > "$work/data.toml"
sed -e 's/^strategy = "data"/strategy = "chain"/' -e 's/^task_size = 64 .*/task_size = 0/' \
  "$work/data.toml" > "$work/chain.toml"
for strategy in data chain; do
  "$acan" train "$work/$strategy.toml" --out "$work/$strategy-mem" --quiet > /dev/null
  "$acan" train "$work/$strategy.toml" --space nats:local --processes 2 --out "$work/$strategy-nats" \
    --quiet > /dev/null
  # train_s: from the active manager taking the lease to the last step (the handlers' loading of
  # their data copy included); the mem: run's wall_s likewise starts once the data is loaded.
  if [[ $strategy == chain ]]; then
    chain_bound "$work/$strategy-mem/summary.json" "$work/$strategy-nats/summary.json" \
      "$work/$strategy.toml" "$raw_mib_pairs" "$strategy"
    continue
  fi
  /usr/bin/python3 - "$work/$strategy-mem/summary.json" "$work/$strategy-nats/summary.json" \
    "$strategy" <<'PY'
import json, sys
mem, nats = (json.load(open(p)) for p in sys.argv[1:3])
print(f"{sys.argv[3]}: mem: 2 threads {mem['wall_s']:.2f} s; nats:local 2 processes: "
      f"train {nats['train_s']:.2f} s (whole run {nats['wall_s']:.2f} s), "
      f"ratio {nats['train_s'] / mem['wall_s']:.1f}x; bitwise equal: "
      f"{'yes' if mem['weights_sha256'] == nats['weights_sha256'] else 'NO'}; "
      f"test accuracy {nats.get('test_accuracy')}; retransmitted {nats['tasks']['retransmitted']}; "
      f"value bytes a step in process (inputs in the space) "
      f"{mem['space']['bytes_moved_per_step'] / 1e6:.1f} MB")
PY
done

echo "== bytes through the server a step, each strategy: Fashion-MNIST 6400 rows, 1 epoch, 2 handler processes"
# Summed from every role process's own account (summary.json -> traffic), inputs made locally.
for spec in "data 64" "tiles 128" "pipeline 64" "chain 0"; do
  set -- $spec
  sed -e 's/^limit = 0 .*/limit = 6400/' -e 's/^epochs = 20/epochs = 1/' \
      -e "s/^strategy = \"data\"/strategy = \"$1\"/" -e "s/^task_size = 64 .*/task_size = $2/" \
      examples/fashion-mnist.toml > "$work/bytes-$1.toml"
  "$acan" train "$work/bytes-$1.toml" --space nats:local --processes 2 --out "$work/bytes-$1" \
    --quiet > /dev/null
  /usr/bin/python3 - "$work/bytes-$1/summary.json" "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t = s["traffic"]
per_batch = t["value_bytes_put"] + t["value_bytes_returned"]
print(f"{sys.argv[2]}: {t['value_bytes_per_step'] / 1e6:.2f} MB of values a step "
      f"({per_batch / 50 / 1e6:.2f} MB a mini-batch of 128), {t['space_calls_per_step']:.0f} "
      f"space calls a step, {s['steps']} steps, train {s['train_s']:.2f} s, "
      f"oracle {s['oracle']['verdict']}")
PY
done

echo "== feasibility job, 4 handler processes over nats:local"
"$acan" train examples/feasibility.toml --space nats:local --processes 4 --out "$work/feas" --quiet \
  > /dev/null
"$acan" train examples/feasibility.toml --out "$work/feas-mem" --quiet
echo "loss $(field "$work/feas-mem/summary.json" initial_loss) -> final epoch" \
     "$(field "$work/feas/summary.json" final_epoch_loss), retransmitted" \
     "$(field "$work/feas/summary.json" tasks.retransmitted) ($(field "$work/feas/summary.json" tasks.retransmit_reasons)), $(field "$work/feas/summary.json" wall_s) s" \
     "(mem: $(field "$work/feas-mem/summary.json" wall_s) s), bitwise equal:" \
     "$([[ $(field "$work/feas/summary.json" weights_sha256) == $(field "$work/feas-mem/summary.json" weights_sha256) ]] && echo yes || echo NO)"

cnn_part
