#!/usr/bin/env bash
# Reference trainer vs PyTorch, one thread each, same models, measured in the same run.
# Usage: bench/nn_compare.sh BUILD_DIR [REPEATS]   (builds nothing; needs BUILD_DIR/bench/nn_benchmark)
# Prints samples/s of both, the ratio acan/PyTorch (goal >= 1.2 for the MLP), and the GEMM
# rate as a fraction of the 117 GFLOP/s single-core peak. Each figure is the best of REPEATS runs
# (default 3), alternating acan and PyTorch so both see the same machine load.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [REPEATS]}
repeats=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
bench="$build/bench/nn_benchmark"
[[ -x "$bench" ]] || { echo "error: $bench not found; build the nn_benchmark target first" >&2; exit 1; }
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$repeats"); do
  "$bench" --benchmark_filter='BM_MlpData/0/|BM_Toy|BM_Sgemm' --benchmark_format=json \
      >"$tmp/acan_$i.json" 2>/dev/null
  /usr/bin/python3 "$here/torch_mlp.py" 3 >"$tmp/torch_$i.txt"
done
/usr/bin/python3 - "$tmp" "$repeats" <<'PY'
import json, re, sys
tmp, n = sys.argv[1], int(sys.argv[2])
best = {}
def keep(name, value):
    best[name] = max(best.get(name, 0.0), value)
for i in range(1, n + 1):
    for b in json.load(open(f"{tmp}/acan_{i}.json"))["benchmarks"]:
        name = b["name"].split("/min_time")[0]
        if "samples_per_s" in b:
            keep(name, b["samples_per_s"])
            keep(name + ":gflops", b["gflops"])
        elif "gflops" in b:
            keep(name + ":gflops", b["gflops"])
    for line in open(f"{tmp}/torch_{i}.txt"):
        m = re.match(r"(\S+) samples_per_s=([\d.]+)", line)
        if m:
            keep(m.group(1), float(m.group(2)))
peak = 117.0
mlp, toy = best["BM_MlpData/0"], best["BM_Toy"]
tmlp, ttoy = best["torch_mlp"], best["torch_toy"]
print(f"MLP 784-1024-1024-10 batch 64, relu, softmax CE, 1 thread (best of {n})")
print(f"  acan    {mlp:10.0f} samples/s   GEMM {best['BM_MlpData/0:gflops']:.1f} GFLOP/s = "
      f"{best['BM_MlpData/0:gflops'] / peak:.2f} of {peak:.0f} peak")
print(f"  pytorch {tmlp:10.0f} samples/s")
print(f"  ratio acan/pytorch {mlp / tmlp:.2f}  (goal >= 1.2)")
print("Toy 44-44-1 batch 1, tanh, mse, 1 thread")
print(f"  acan    {toy:10.0f} samples/s")
print(f"  pytorch {ttoy:10.0f} samples/s")
print(f"  ratio acan/pytorch {toy / ttoy:.1f}")
print("Raw cblas_sgemm, 1 thread (m x n x k)")
for k, v in sorted(best.items()):
    if k.startswith("BM_Sgemm") and k.endswith(":gflops"):
        shape = "x".join(k.split(":")[0].split("/")[1:])
        print(f"  {shape:16s} {v:6.1f} GFLOP/s = {v / peak:.2f} of peak")
PY
