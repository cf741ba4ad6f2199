#!/usr/bin/env bash
# TLS and the audit log's cost on the multi-process Fashion-MNIST run: one epoch of the
# flagship job over 2 handler processes on nats:local, in plain text and with a secure deployment
# (`acan secure init`: TLS, a role each), alternating, ROUNDS pairs, for the flagship's data
# strategy and for the chain strategy with its measured grain (the network's configuration). The
# audit log is written in both (every run keeps one). Prints each pair and the median ratio.
# Usage: [STRATEGIES="data chain"] bench/secure_overhead.sh BUILD_DIR [ROUNDS]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [ROUNDS]}
rounds=${2:-3}
acan="$build/src/cli/acan"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$acan" secure init "$work/deployment" > /dev/null
sed -e 's/^epochs = 20/epochs = 1/' examples/fashion-mnist.toml > "$work/data.toml"
sed -e 's/^strategy = "data"/strategy = "chain"/' -e 's/^task_size = 64 .*/task_size = 0/' \
  "$work/data.toml" > "$work/chain.toml"
for strategy in ${STRATEGIES:-data chain}; do
  for r in $(seq 1 "$rounds"); do
    for mode in plain secure; do
      space=nats:local
      [[ $mode == secure ]] && space="nats:local?secure=$work/deployment"
      out="$work/$strategy-$mode-$r"
      "$acan" train "$work/$strategy.toml" --space "$space" --processes 2 --out "$out" --quiet \
        > "$out.log" 2>&1
    done
  done
  /usr/bin/python3 - "$work" "$strategy" "$rounds" <<'PY'
import json, statistics, sys
work, strategy, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
ratios, sha = [], set()
for r in range(1, rounds + 1):
    p = json.load(open(f"{work}/{strategy}-plain-{r}/summary.json"))
    s = json.load(open(f"{work}/{strategy}-secure-{r}/summary.json"))
    sha |= {p["weights_sha256"], s["weights_sha256"]}
    ratios.append(s["wall_s"] / p["wall_s"])
    print(f"{strategy} pair {r}: plain {p['wall_s']:.2f} s, secure {s['wall_s']:.2f} s, "
          f"{ratios[-1]:.3f}x")
assert len(sha) == 1, "the secure run's weights differ from the plain run's"
print(f"{strategy}: secure / plain median {statistics.median(ratios):.3f}x over {rounds} pairs "
      f"(goal 1.10); weights bitwise equal")
PY
done
