#!/usr/bin/env bash
# Fashion-MNIST under the robustness experiment's fault schedule: every 5 s each handler and the
# manager crash (p = 1, at independent random moments) and the speed factors 1:5:10 are given out
# again. Runs the job fault-free and under faults, in the same run, and prints both test
# accuracies (goal: within 0.5 points) and whether the weights are identical (window 1: they must
# be). Usage: bench/fashion_chaos.sh [BUILD_DIR] [CONFIG]   (takes a few minutes on 2 cores)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
config=${2:-$root/examples/fashion-mnist.toml}
acan="$build/src/cli/acan"
[[ -x "$acan" ]] || { echo "error: $acan not found; build the acan_cli target" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fault-free: acan train $config" >&2
"$acan" train "$config" --out "$tmp/clean" --quiet
echo "faults: acan train $config --crash-interval-s 5 --crash-probability 1 --crash-manager true --speeds 1,5,10 --speed-change-s 5" >&2
"$acan" train "$config" --out "$tmp/chaos" --quiet --crash-interval-s 5 --crash-probability 1 \
  --crash-manager true --speeds 1,5,10 --speed-change-s 5
/usr/bin/python3 - "$tmp/clean/summary.json" "$tmp/chaos/summary.json" <<'PY'
import json, sys
c, f = (json.load(open(p)) for p in sys.argv[1:3])
d = 100 * (f["test_accuracy"] - c["test_accuracy"])
print(f"fault-free  test_accuracy {c['test_accuracy']:.4f}  wall {c['wall_s']:6.1f} s")
print(f"with faults test_accuracy {f['test_accuracy']:.4f}  wall {f['wall_s']:6.1f} s  "
      f"crashes: {f['crashes']['handlers']} handler, {f['crashes']['manager']} manager; "
      f"retransmitted {f['tasks']['retransmitted']}; extra compute {f['compute']['extra_compute_ratio']:.3f}")
print(f"  difference {d:+.2f} points (goal: within 0.5) {'ok' if abs(d) <= 0.5 else 'MISSED'}")
same = f["weights_sha256"] == c["weights_sha256"]
print(f"  weights identical (window {f['window']}): {'yes' if same else 'NO'}")
PY
