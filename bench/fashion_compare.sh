#!/usr/bin/env bash
# Fashion-MNIST end to end: acan (2 handlers) against PyTorch (2 threads) on the same job, measured
# in the same run. Usage: bench/fashion_compare.sh [BUILD_DIR] [CONFIG]
#   BUILD_DIR defaults to ./build and needs src/cli/acan and bench/fashion_export built;
#   CONFIG defaults to examples/fashion-mnist.toml.
# Same initial weights (bench/fashion_export writes acan's initial model), same row order (it
# writes each epoch's shuffle), same hyper-parameters (bench/torch_fashion.py reads CONFIG).
# Prints both test accuracies, their difference in points (goal: within 0.5), both wall times
# (training only) and the ratio acan/PyTorch (goal: below 1). Needs dataset-fashion-mnist and
# python3-torch; runs take a few minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
config=${2:-$root/examples/fashion-mnist.toml}
acan="$build/src/cli/acan"
export_tool="$build/bench/fashion_export"
for f in "$acan" "$export_tool"; do
  [[ -x "$f" ]] || { echo "error: $f not found; build the acan_cli and fashion_export targets in $build" >&2; exit 1; }
done
[[ -f "$config" ]] || { echo "error: job file $config not found" >&2; exit 1; }
if grep -q '^source *= *"fashion-mnist"' "$config" && \
   [[ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
  echo "error: Fashion-MNIST is missing; install it with: sudo apt-get install dataset-fashion-mnist" >&2
  exit 1
fi
/usr/bin/python3 -c 'import torch' 2>/dev/null || {
  echo "error: PyTorch is missing; install it with: sudo apt-get install python3-torch" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out="$tmp/acan"
"$export_tool" "$config" "$tmp" >/dev/null

echo "acan: $acan train $config --handlers 2" >&2
"$acan" train "$config" --handlers 2 --out "$out" --quiet >"$tmp/acan.log" 2>&1 || {
  cat "$tmp/acan.log" >&2; exit 1; }
if ! /usr/bin/python3 -c 'import json,sys; sys.exit("test_accuracy" not in json.load(open(sys.argv[1])))' \
     "$out/summary.json"; then
  # This acan writes no test figures into summary.json: evaluate the saved model.
  "$acan" eval "$out/model.safetensors" "$config" --json >"$tmp/eval.json"
fi

echo "pytorch: /usr/bin/python3 bench/torch_fashion.py (2 threads, OMP_WAIT_POLICY=passive)" >&2
OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 \
  /usr/bin/python3 "$here/torch_fashion.py" "$config" "$tmp" 2 >"$tmp/torch.json"

/usr/bin/python3 - "$out/summary.json" "$tmp/eval.json" "$tmp/torch.json" "$config" <<'PY'
import json, os, sys
summary = json.load(open(sys.argv[1]))
acan = dict(summary)
if "test_accuracy" not in acan:
    ev = json.load(open(sys.argv[2]))
    if ev.get("split") != "test":
        sys.exit("error: the job has no test split; add one to compare test accuracy")
    acan.update(test_accuracy=ev["test_accuracy"], test_loss=ev["test_loss"],
                per_class_accuracy=ev["per_class_accuracy"])
torch = json.load(open(sys.argv[3]))
if "test_accuracy" not in torch:
    sys.exit("error: PyTorch found no test split in the job")
a, t = acan["test_accuracy"], torch["test_accuracy"]
diff = 100 * (a - t)
# Training time on both sides: acan's train_s leaves out its per-epoch test evaluations.
wa, wt = acan.get("train_s", acan["wall_s"]), torch["wall_s"]
print(f"job {os.path.abspath(sys.argv[4])}")
print(f"  acan    test_accuracy {a:.4f}  test_loss {acan['test_loss']:.4f}  wall {wa:7.1f} s  (2 handlers)")
print(f"  pytorch test_accuracy {t:.4f}  test_loss {torch['test_loss']:.4f}  wall {wt:7.1f} s  (2 threads)")
print(f"  accuracy difference acan - pytorch {diff:+.2f} points  (goal: within 0.5) "
      f"{'ok' if abs(diff) <= 0.5 else 'MISSED'}")
print(f"  goal test_accuracy >= 0.89: acan {'ok' if a >= 0.89 else 'MISSED'}, "
      f"pytorch {'ok' if t >= 0.89 else 'MISSED'}")
print(f"  wall time ratio acan/pytorch {wa / wt:.2f}  (goal: below 1) {'ok' if wa < wt else 'MISSED'}")
print("  per-class accuracy (acan / pytorch):")
for c, (x, y) in enumerate(zip(acan["per_class_accuracy"], torch["per_class_accuracy"])):
    print(f"    class {c}: {x:.3f} / {y:.3f}")
PY
