#!/usr/bin/env bash
# A convolutional network (a list of layers: convolution, pooling, dropout) trained in process and
# across processes over nats:local with handlers and managers SIGKILLed: the same weights bit for
# bit, restarts that happened, and each run's audit log naming its final model. Then the same list
# in tiles of 2 units (channels, features) across processes: the in-process weights bit for bit.
# Usage: cnn_processes.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/cnn.toml" <<'TOML'
[model]
input_shape = [1, 6, 6]
loss = "softmax_cross_entropy"
[[model.layer]]
type = "conv2d"
in_channels = 1
out_channels = 4
kernel_size = 3
padding = 1
[[model.layer]]
type = "relu"
[[model.layer]]
type = "max_pool2d"
kernel_size = 2
[[model.layer]]
type = "flatten"
[[model.layer]]
type = "dropout"
p = 0.2
[[model.layer]]
type = "linear"
in_features = 36
out_features = 3
[data]
source = "synthetic"
samples = 960
[train]
epochs = 4
batch = 16
lr = 0.05
momentum = 0.9
[partition]
strategy = "data"
task_size = 4
[runtime]
handlers = 2
TOML
sha() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["weights_sha256"])' "$1"; }
"$acan" train "$work/cnn.toml" --out "$work/mem" --quiet
# SIGKILLs every 1.5 s with probability 0.7, the manager too: a 20-30 s run sees dozens.
"$acan" train "$work/cnn.toml" --processes 2 --space nats:local --out "$work/proc" \
  --crash-interval-s 1.5 --crash-probability 0.7 --crash-manager true > "$work/proc.log" 2>&1 || {
  cat "$work/proc.log"; exit 1; }
grep -E "restarts" "$work/proc.log"
restarts=$(grep -oE '[0-9]+ handler and [0-9]+ manager restarts' "$work/proc.log")
read -r handlers _ _ managers _ <<< "$restarts"
[[ $handlers -gt 0 && $managers -gt 0 ]] || { echo "FAIL: no kills happened ($restarts)"; exit 1; }
mem=$(sha "$work/mem/summary.json") proc=$(sha "$work/proc/summary.json")
echo "in process $mem; across processes under kills $proc"
[[ "$mem" == "$proc" ]] || { echo "FAIL: the weights differ"; exit 1; }
for run in mem proc; do
  "$acan" audit verify "$work/$run/audit.jsonl" --model "$work/$run/model.safetensors"
done
echo "ok: bitwise across processes under $handlers handler and $managers manager kills"

# Tiles: a conv's output channels by its input channels, the linear layer's features by the
# conv's channel blocks; every tile, activation, input-grad and update task crosses the space.
sed -e 's/^samples = 960$/samples = 192/' -e 's/^epochs = 4$/epochs = 1/' \
  -e 's/^strategy = "data"$/strategy = "tiles"/' -e 's/^task_size = 4$/task_size = 2/' \
  "$work/cnn.toml" > "$work/tiles.toml"
"$acan" train "$work/tiles.toml" --out "$work/tiles-mem" --quiet
"$acan" train "$work/tiles.toml" --processes 2 --space nats:local --out "$work/tiles-proc" \
  > "$work/tiles.log" 2>&1 || { cat "$work/tiles.log"; exit 1; }
mem=$(sha "$work/tiles-mem/summary.json") proc=$(sha "$work/tiles-proc/summary.json")
echo "tiles: in process $mem; across processes $proc"
[[ "$mem" == "$proc" ]] || { echo "FAIL: the tiles' weights differ across processes"; exit 1; }
echo "ok: tiles bitwise across processes"
