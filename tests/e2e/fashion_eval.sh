#!/usr/bin/env bash
# End to end through the acan command: a CI-sized Fashion-MNIST run beats chance by far, and the
# saved model, loaded again by `acan eval`, has exactly the test accuracy the run reported.
# Usage: fashion_eval.sh ACAN_BINARY   (skips, exit 0 with a note, without dataset-fashion-mnist)
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
  echo "SKIPPED: dataset-fashion-mnist is not installed"
  exit 0
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$acan" train "$here/fashion-small.toml" --out "$out" --quiet
"$acan" eval "$out/model.safetensors" "$here/fashion-small.toml" --json > "$out/eval.json"
/usr/bin/python3 - "$out/summary.json" "$out/eval.json" <<'PY'
import json, sys
s, e = (json.load(open(p)) for p in sys.argv[1:3])
in_run, reloaded = s["test_accuracy"], e["test_accuracy"]
print(f"in-run test accuracy {in_run:.4f}, reloaded {reloaded:.4f}, rows {e['rows']}")
assert e["split"] == "test" and e["rows"] == 2000, e
assert in_run == reloaded, "the saved model's accuracy differs from the in-run figure"
assert s["test_loss"] == e["test_loss"], (s["test_loss"], e["test_loss"])
assert in_run > 0.6, f"test accuracy {in_run} does not beat chance (0.1) by a wide margin"
assert len(s["test_per_epoch"]) == 1 and len(s["per_class_accuracy"]) == 10
PY
