#!/usr/bin/env bash
# A layer no process holds, at benchmark size (issue 44; docs/benchmarks.md, "A 256 MiB layer"):
# layers [1024, 8192, 8192, 10], the 8192 x 8192 layer 256 MiB of weights (512 with its velocity),
# tiles cut by the runtime for 4 handler processes and the managers at 32 MiB each over nats:local,
# a few steps of 16. Measured in one run:
#  - each role process's peak RSS (VmHWM from /proc, polled) against its budget plus the baseline
#    of its role (the processes of a tiny tiles job);
#  - the bytes through the server a step against the least a step moves (summary.json's traffic:
#    the parameters and velocities read once and written once);
#  - samples/s against the bound its FLOPs and bytes imply here: the same job in process (4
#    handler threads, the same tiles, no budgets: the compute and the runtime) plus that least at
#    raw libnats' 1 MiB put+take rate (build/bench/nats_compare); goal within 1.5x of the bound;
#  - PyTorch (python3-torch) training the same layers in one process on 2 threads, for scale: its
#    peak RSS and samples/s (bench/torch_wide.py);
#  - the weights of the run across processes bitwise those of the in-process run.
# With --differ: the 64 MiB layer with handlers at 8, 16, 16 and 32 MiB (the manager at 16), cut
# in bands for their budgets against the same budgets cut uniformly for the smallest (the tiles
# the 8 MiB band has): step time, tasks a step, bytes a step, each handler's peak RSS against its
# own budget, and the banded run's weights bitwise the in-process run's at its bands.
# Usage: bench/wide_layer.sh [BUILD_DIR] [--quick|--differ]   (--quick: 4096 x 4096, 64 MiB, at
# 16 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
quick=${2:-}
acan=$build/src/cli/acan
work=$(mktemp -d)
pids=()
source tests/e2e/small_job.sh
source tests/e2e/peaks.sh
trap stop_started EXIT
width=8192 budget=32MiB budget_kib=32768 steps=5
if [[ "$quick" == --quick || "$quick" == --differ ]]; then width=4096 budget=16MiB budget_kib=16384; fi
batch=16

cat > "$work/wide.toml" <<TOML
[model]
layers = [1024, $width, $width, 10]
activation = "relu"
loss = "softmax_cross_entropy"
[data]
source = "synthetic"
samples = $((batch * steps))
[train]
epochs = 1
batch = $batch
lr = 0.01
momentum = 0.9
seed = 7
[partition]
strategy = "tiles"
task_size = 0
[runtime]
handlers = 4
handler_memory = "$budget"
manager_memory = "$budget"
TOML

echo "== baseline: a tiny tiles job's processes"
baseline_peaks "$acan" "$work/small.peaks"
echo "handlers $(highest "$work/small.peaks" handler) kB, managers $(highest "$work/small.peaks" manager) kB"

echo "== raw libnats, 1 MiB put+take pairs"
"$build/bench/nats_compare" --rounds 2 --seconds 1 > "$work/space.txt"
raw=$(sed -n 's/^1048576 B values: raw libnats \([0-9.]*\) pairs.*/\1/p' "$work/space.txt")
echo "$raw pairs a second"

# across NAME JOB: JOB over nats:local with 4 handler processes into $work/NAME, its log in
# $work/NAME.log and its processes' peaks in $work/NAME.peaks.
across() {
  ACAN_LOG_LEVEL=info "$acan" train "$2" --space nats:local --processes 4 --out "$work/$1" \
    > "$work/$1.log" 2>&1 &
  local run=$!
  pids+=("$run")
  peaks "$run" "$work/$1.peaks"
  wait "$run" || { tail -20 "$work/$1.log" >&2; exit 1; }
}

if [[ "$quick" == --differ ]]; then
  sed -i 's/^handler_memory = .*/handler_memory = ["8MiB", "16MiB", "16MiB", "32MiB"]/' "$work/wide.toml"
  echo "== handlers at 8, 16, 16 and 32 MiB: tiles cut in bands for their budgets"
  across bands "$work/wide.toml"
  grep -m1 -o "tiles cut in bands: .*" "$work/bands.log" || true
  read -r small_edge bands < <(/usr/bin/python3 - "$work/bands/summary.json" <<'PY'
import json, sys
bands = json.load(open(sys.argv[1]))["tile_bands"]
print(min(b["edge"] for b in bands), "tile_bands = [" + ", ".join(
    f'{{edge = {b["edge"]}, share = {b["share"]}, budget = {b["budget"]}}}' for b in bands) + "]")
PY
)
  echo "== the same budgets, tiles of $small_edge for all (the uniform cut for the smallest)"
  sed "s/^task_size = 0/task_size = $small_edge/" "$work/wide.toml" > "$work/uniform.toml"
  across uniform "$work/uniform.toml"
  echo "== in process at the same bands, no budgets"
  sed "s/^task_size = 0/$bands/; /^handler_memory/d; /^manager_memory/d" "$work/wide.toml" \
    > "$work/mem.toml"
  "$acan" train "$work/mem.toml" --out "$work/mem" --quiet > /dev/null
  /usr/bin/python3 - "$work" "$(highest "$work/small.peaks" handler)" \
    "$(highest "$work/small.peaks" manager)" <<'PY'
import json, sys
work, base_h, base_m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
budgets = [8, 16, 16, 32]
mem = json.load(open(f"{work}/mem/summary.json"))
steps = {}
for name in ("bands", "uniform"):
    s = json.load(open(f"{work}/{name}/summary.json"))
    step_s = s["train_s"] / s["steps"]
    steps[name] = step_s
    t = s["traffic"]
    tasks = s["tasks"]["completed"] / s["steps"]
    print(f"{name}: a step {step_s:.2f} s, {tasks:.0f} tasks a step, "
          f"{t['value_bytes_per_step'] / 1e6:.0f} MB a step ({t['per_step_over_minimum']:.2f}x the least), "
          f"oracle {s['oracle']['verdict']}, refused {s['tasks'].get('retransmit_reasons', {}).get('refused', 0)}")
    for line in open(f"{work}/{name}.peaks"):
        _, role, kb, hid = line.split()
        limit = (budgets[int(hid)] * 1024 + base_h) if role == "handler" else 16 * 1024 + base_m
        label = f"handler {hid} at {budgets[int(hid)]} MiB" if role == "handler" else "manager at 16 MiB"
        print(f"  {label}: peak {kb} kB against {limit} kB: {'under' if int(kb) <= limit else 'OVER'}")
b = json.load(open(f"{work}/bands/summary.json"))
print(f"bands against uniform: {steps['uniform'] / steps['bands']:.2f}x as fast; "
      f"bitwise the in-process run at the bands: {'yes' if b['weights_sha256'] == mem['weights_sha256'] else 'NO'}")
PY
  exit 0
fi

echo "== layers [1024, $width, $width, 10], 4 handler processes and the managers at $budget, nats:local"
across nats "$work/wide.toml"
edge=$(grep -m1 -o "tiles of [0-9]*" "$work/nats.log" | grep -o "[0-9]*$")
echo "tiles of $edge; handlers peaked at $(spread "$work/nats.peaks" handler) kB," \
  "managers at $(spread "$work/nats.peaks" manager) kB"

echo "== the same in process (4 handler threads, tiles of $edge, no budgets)"
sed "s/^task_size = 0/task_size = $edge/; /^handler_memory/d; /^manager_memory/d" \
  "$work/wide.toml" > "$work/mem.toml"
"$acan" train "$work/mem.toml" --out "$work/mem" --quiet > /dev/null

echo "== PyTorch, one process, 2 threads"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  apt-get install -y python3-torch > /dev/null || echo "python3-torch could not be installed"
fi
torch_line=$(/usr/bin/python3 bench/torch_wide.py "1024,$width,$width,10" "$batch" "$steps" 2 ||
  echo "torch_wide unavailable")
echo "$torch_line"

/usr/bin/python3 - "$work/nats/summary.json" "$work/mem/summary.json" "$raw" "$batch" \
  "$work/small.peaks" "$work/nats.peaks" "$budget_kib" "$width" "$torch_line" <<'PY'
import json, sys
nats, mem = (json.load(open(p)) for p in sys.argv[1:3])
raw, batch, budget_kib, width = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[7]), int(sys.argv[8])
def peaks(path):
    out = {}
    for line in open(path):
        _, role, kb = line.split()[:3]
        out.setdefault(role, []).append(int(kb))
    return out
base, run = peaks(sys.argv[5]), peaks(sys.argv[6])
steps = nats["steps"]
t = nats["traffic"]
least = t["minimum_bytes_per_step"]
crossing_s = 1 / (2 * raw)  # a put+take pair is two crossings of a MiB
compute_s = mem["wall_s"] / mem["steps"]
bound_s = compute_s + least / 2**20 * crossing_s
step_s = nats["train_s"] / steps
layer_mib = width * width * 4 / 2**20
print(f"layer {layer_mib:.0f} MiB ({2 * layer_mib:.0f} with its velocity), budget "
      f"{budget_kib / 1024:.0f} MiB: {layer_mib * 1024 / budget_kib:.0f}x the largest budget")
for role in ("handler", "manager"):
    top, b = max(run[role]), max(base[role])
    print(f"{role}s: {len(run[role])} processes, peak RSS {min(run[role])}-{top} kB against "
          f"{budget_kib} + {b} (baseline): {'under' if top <= budget_kib + b else 'OVER'}")
print(f"bytes a step: {t['value_bytes_per_step'] / 1e6:.1f} MB against the least "
      f"{least / 1e6:.1f} MB ({t['value_bytes_per_step'] / least:.2f}x); "
      f"{t['space_calls_per_step']:.0f} space calls a step")
print(f"a step: {step_s:.2f} s across processes ({batch / step_s:.2f} samples/s); bound "
      f"{bound_s:.2f} s (in process {compute_s:.2f} s + the least bytes at raw libnats' "
      f"{2 * raw:.0f} MiB/s); {step_s / bound_s:.2f}x the bound (goal 1.5x)")
print(f"bitwise the in-process run: {'yes' if nats['weights_sha256'] == mem['weights_sha256'] else 'NO'}; "
      f"oracle {nats['oracle']['verdict']}; retransmitted {nats['tasks']['retransmitted']}")
print(f"PyTorch, one process: {sys.argv[9]}")
PY
