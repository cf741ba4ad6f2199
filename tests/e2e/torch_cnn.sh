#!/usr/bin/env bash
# A small CNN (every layer type acan has) trained by `acan train` on part of Fashion-MNIST, its
# model file loaded into the equivalent torch.nn.Sequential with load_state_dict(strict=True) and
# evaluated by PyTorch to acan's test loss and accuracy (tests/e2e/torch_cnn.py). Then the same
# layers trained step for step by acan (data, pipeline, chain and tiles of 4 units) and by PyTorch from
# PyTorch's initial weights, rows in order, acan's dropout masks: every tensor equal to rounding
# (tests/e2e/torch_cnn_train.py). Skipped (77)
# where python3-torch is not installed (scripts/install-deps.sh --bench installs it).
# Usage: torch_cnn.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null || {
  echo "skipped: python3-torch is not installed"; exit 77; }
[[ -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]] || {
  echo "skipped: dataset-fashion-mnist is not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/cnn.toml" <<'TOML'
[model]
loss = "softmax_cross_entropy"
init = "kaiming_uniform"
[[model.layer]]
type = "conv2d"
in_channels = 1
out_channels = 8
kernel_size = 3
padding = 1
[[model.layer]]
type = "relu"
[[model.layer]]
type = "max_pool2d"
kernel_size = 2
[[model.layer]]
type = "conv2d"
in_channels = 8
out_channels = 16
kernel_size = [3, 3]
bias = false
[[model.layer]]
type = "tanh"
[[model.layer]]
type = "avg_pool2d"
kernel_size = 2
padding = 1
[[model.layer]]
type = "flatten"
[[model.layer]]
type = "dropout"
p = 0.3
[[model.layer]]
type = "linear"
in_features = 784
out_features = 32
[[model.layer]]
type = "sigmoid"
[[model.layer]]
type = "linear"
in_features = 32
out_features = 10
[data]
source = "fashion-mnist"
limit = 2048
test_limit = 1000
[train]
epochs = 2
batch = 32
lr = 0.05
momentum = 0.9
[partition]
strategy = "data"
task_size = 16
[runtime]
handlers = 2
TOML
"$acan" train "$work/cnn.toml" --out "$work/out" --quiet
/usr/bin/python3 "$here/torch_cnn.py" "$work/cnn.toml" "$work/out/model.safetensors" \
  "$work/out/summary.json"

# Step for step against PyTorch: 3 steps of 32 rows (momentum, the lr's decay after 2 steps) from
# PyTorch's initial weights, given as model.init.
/usr/bin/python3 "$here/torch_cnn_train.py" init "$work/cnn.toml" "$work/init.safetensors"
for strategy in data pipeline chain tiles; do
  sed -e 's/^limit = 2048$/limit = 96\nshuffle = false/' -e 's/^epochs = 2$/epochs = 1\nlr_decay = 0.5\nlr_decay_steps = 2/' \
    -e "s|^init = .*|init = \"$work/init.safetensors\"|" -e "s/^strategy = .*/strategy = \"$strategy\"/" \
    -e "s/^task_size = 16$/task_size = $([[ $strategy == tiles ]] && echo 4 || echo 0)/" "$work/cnn.toml" > "$work/steps.toml"
  echo "== $strategy"
  "$acan" train "$work/steps.toml" --out "$work/steps-$strategy" --quiet
  /usr/bin/python3 "$here/torch_cnn_train.py" check "$work/steps.toml" "$work/init.safetensors" \
    "$work/steps-$strategy/model.safetensors"
done
