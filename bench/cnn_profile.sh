#!/usr/bin/env bash
# Where a CNN's training time goes, kernel by kernel and in hand-overs (docs/benchmarks.md,
# "Convolutional networks"): `acan train` of a job (default examples/fashion-cnn.toml cut to ROWS
# training rows, one epoch, 1 000 test rows) under `perf record` (cpu-clock samples of every
# thread of the process), each sample put in a group by the function it fell in:
#   gemm        OpenBLAS's sgemm (the convolutions' and linear layers' matrix products)
#   im2col      Im2Col, Col2Im (a convolution's patches and their adjoint)
#   pooling     max and average pooling, forward and backward
#   activation  the activations, dropout, the bias gradients, the loss
#   update      the SGD step (the update tasks)
#   zero/copy   memset and memmove (zeroed outputs, copied activations, values handed over)
#   data load   reading and inflating the data set (zlib, the idx reader)
#   hand-over   the rest of acan and its libraries: the tuple space, task specs, the manager
#   os          the kernel (page faults, futexes, scheduling)
# and each group's share of the samples printed (evaluation included: its convolutions are
# kernels too), with each handler's idle ratio from the run's summary (the time it waited for
# a task: hand-overs and the step's barrier). perf's dwarf call stacks came out truncated in
# most samples on this VM, so samples are grouped by their own function only.
# Needs perf (Debian's linux-perf; installed when missing).
# Usage: bench/cnn_profile.sh [BUILD_DIR] [JOB] [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
job=${2:-examples/fashion-cnn.toml}
rows=${3:-6400}
acan=$build/src/cli/acan
command -v perf > /dev/null || { apt-get update -qq && apt-get install -y -qq linux-perf > /dev/null; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e 's/^epochs = [0-9]*/epochs = 1/' -e "s/^limit = 0 .*/limit = $rows/" \
  -e 's/^test_limit = 0/test_limit = 1000/' "$job" > "$work/job.toml"
cp -n "$(dirname "$job")"/*.toml "$work/" 2> /dev/null || true
perf record -q -e cpu-clock -F 997 -o "$work/perf.data" -- \
  "$acan" train "$work/job.toml" --out "$work/run" --quiet > /dev/null 2> "$work/perf.log"
perf report -i "$work/perf.data" --stdio --no-children --sort dso,sym 2> /dev/null > "$work/report.txt"
/usr/bin/python3 - "$work/report.txt" "$work/run/summary.json" "$job" "$rows" <<'PY'
import json, re, sys
groups = [
    ("gemm", r"sgemm|cblas_"),
    ("im2col", r"Im2Col|Col2Im|ForEachPatch"),
    ("pooling", r"Pool2d|MaxAt|Windows"),
    ("activation", r"Activation|Dropout|Keeps|BiasGrad|ComputeLoss|Softmax"),
    ("update", r"SgdUpdate|RunUpdate"),
    ("zero/copy", r"memset|memmove|memcpy"),
]
shares = {g: 0.0 for g, _ in groups}
shares.update({"data load": 0.0, "hand-over": 0.0, "os": 0.0})
for line in open(sys.argv[1]):
    m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)", line)
    if not m:
        continue
    pct, dso, kind, sym = float(m.group(1)), m.group(2), m.group(3), m.group(4)
    if kind == "k":
        shares["os"] += pct
    elif dso.startswith("libz") or re.search(r"Idx|crc32|Gzip", sym):
        shares["data load"] += pct
    else:
        shares[next((g for g, p in groups if re.search(p, sym)), "hand-over")] += pct
s = json.load(open(sys.argv[2]))
print(f"{sys.argv[3]}, {sys.argv[4]} rows, 1 epoch: wall {s['wall_s']:.2f} s (training "
      f"{s['train_s']:.2f} s, evaluation {s['eval_s']:.2f} s), {s['steps']} steps")
print("each handler's share of the training time waiting for a task (hand-overs, the step's "
      "barrier): " + ", ".join(f"{h['idle_ratio']:.2f}" for h in s["per_handler"]))
print("share of the process's CPU samples, by the function each fell in:")
for g, v in sorted(shares.items(), key=lambda kv: -kv[1]):
    print(f"  {g:<11} {v:5.1f}%")
PY
