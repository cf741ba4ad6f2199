#!/usr/bin/env bash
# The runtime against the reference trainer and PyTorch, measured in the same run.
# Usage: bench/runtime_compare.sh [BUILD_DIR] [STEPS] [ROUNDS]   (needs BUILD_DIR/bench/runtime_compare)
set -euo pipefail
build=${1:-build}
steps=${2:-60}
rounds=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
/usr/bin/python3 -c 'import torch' 2>/dev/null || {
  echo "error: PyTorch is missing; install it with: scripts/install-deps.sh --bench" >&2; exit 1; }
acan_out=$("$build/bench/runtime_compare" --steps "$steps" --rounds "$rounds")
torch_out=$(/usr/bin/python3 "$here/torch_mlp.py" 3)
echo "$acan_out" | grep -v samples_per_s=
echo "$acan_out" | grep -q "bitwise=NO" && { echo "error: a chain run's weights differ" >&2; exit 1; }
/usr/bin/python3 - "$acan_out" "$torch_out" <<'PY'
import re, sys
vals = {}
for text in sys.argv[1:]:
    for m in re.finditer(r"(\S+) samples_per_s=([\d.]+)", text):
        vals[m.group(1)] = float(m.group(2))
torch = vals["torch_toy"]
print(f"  reference trainer, 1 thread   {vals['reference_toy']:8.0f} samples/s")
print(f"  PyTorch toy loop, 1 thread    {torch:8.0f} samples/s")
for w in (1, 8):
    r = vals[f"runtime_toy_w{w}"]
    print(f"  runtime, 4 handlers, data partition, window {w} {r:8.0f} samples/s = {r / torch:.2f}x PyTorch")
for m in re.finditer(r"runtime_toy_chain(\d+) samples_per_s=([\d.]+) bitwise=(\w+)", sys.argv[1]):
    k, r, same = int(m.group(1)), float(m.group(2)), m.group(3)
    print(f"  runtime, 4 handlers, chains of {k:3d} steps {r:8.0f} samples/s = {r / torch:.1f}x PyTorch"
          f" (goal >= 10x); weights bitwise the reference's: {same}")
PY
