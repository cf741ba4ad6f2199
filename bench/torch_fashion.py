#!/usr/bin/python3
"""PyTorch twin of an acan job file (bench/fashion_compare.sh runs it beside `acan train`).

Trains the job in CONFIG with PyTorch from the same initial weights (EXPORT_DIR/init.safetensors)
in the same row order (EXPORT_DIR/order.bin, int32, epochs x rows), both written by
bench/fashion_export for that CONFIG, with the same hyper-parameters read from CONFIG: layers,
activation, softmax cross-entropy, SGD with momentum (v = m v + g; w -= lr v, PyTorch's own
formula with dampening 0), lr * lr_decay ** (step // lr_decay_steps), batch, epochs, and the same
input preprocessing (data.scale, data.standardize, limit, test_limit), and for a list of layers
with dropout the same masks (torch_layers.AcanDropout: acan's mask of train.seed, the mini-batch's
index and the row; TORCH_OWN_DROPOUT=1 draws PyTorch's own instead). TORCH_SAVE_STATE=FILE.npz
saves the trained state_dict (acan's names) for a check against acan's model. Then evaluates on the test
split. Prints one JSON object: test_loss, test_accuracy, per_class_accuracy, wall_s (the
training loop only, as acan's summary.json wall_s), threads, dropout ("acan" or "torch").

Usage: OMP_WAIT_POLICY=passive /usr/bin/python3 bench/torch_fashion.py CONFIG EXPORT_DIR [THREADS]
"""
import gzip
import json
import os
import struct
import sys
import time
import tomllib

import numpy as np
import torch

from torch_layers import AcanDropout, sequential

FASHION_DIR = "/usr/share/datasets/fashion-mnist"


def read_safetensors(path):
    """A minimal safetensors reader (F32 only): {name: numpy array}."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise SystemExit(f"{path}: tensor {name} has dtype {info['dtype']}, expected F32")
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(blob[base + begin:base + end], dtype="<f4").reshape(info["shape"])
    return out


def read_idx(path, dims):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        blob = f.read()
    magic, = struct.unpack(">I", blob[:4])
    if magic != 0x800 | dims:
        raise SystemExit(f"{path}: IDX magic {magic:#010x}, expected {0x800 | dims:#010x}")
    shape = struct.unpack(">" + "I" * dims, blob[4:4 + 4 * dims])
    return np.frombuffer(blob[4 + 4 * dims:], dtype=np.uint8).reshape(shape)


def resolve(base, path):
    return path if os.path.isabs(path) else os.path.join(base, path)


def load_split(cfg, base, test):
    data = cfg.get("data", {})
    source = data.get("source", "synthetic")
    if source == "fashion-mnist":
        prefix = f"{FASHION_DIR}/{'t10k' if test else 'train'}"
        images, labels = prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz"
    elif source == "idx":
        ik, lk = ("test_images", "test_labels") if test else ("images", "labels")
        if ik not in data:
            return None
        images, labels = resolve(base, data[ik]), resolve(base, data[lk])
    else:
        raise SystemExit(f"data.source = {source!r}: this script handles fashion-mnist and idx")
    x = read_idx(images, 3)
    x = x.reshape(x.shape[0], -1).astype(np.float32)
    y = read_idx(labels, 1).astype(np.int64)
    limit = data.get("test_limit" if test else "limit", 0)
    if limit > 0:
        x, y = x[:limit], y[:limit]
    scale = data.get("scale", "auto")
    if scale in ("auto", "unit"):  # auto = unit for idx and fashion-mnist, as in acan
        x *= np.float32(1.0 / 255.0)
    return x, y


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    config, export = sys.argv[1], sys.argv[2]
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    torch.set_num_threads(threads)
    with open(config, "rb") as f:
        cfg = tomllib.load(f)
    base = os.path.dirname(os.path.abspath(config))
    model_cfg, train = cfg.get("model", {}), cfg.get("train", {})
    if model_cfg.get("loss") != "softmax_cross_entropy":
        raise SystemExit("model.loss must be softmax_cross_entropy for this script")
    widths = model_cfg.get("layers") or [0, model_cfg["layer"][-1]["out_features"]]
    act = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid,
           "identity": torch.nn.Identity}[model_cfg.get("activation", "tanh")]
    epochs, batch = train.get("epochs", 2), train.get("batch", 1)
    lr, momentum = float(train.get("lr", 0.05)), float(train.get("momentum", 0.0))
    decay, decay_steps = float(train.get("lr_decay", 1.0)), train.get("lr_decay_steps", 0)

    x, y = load_split(cfg, base, test=False)
    test = load_split(cfg, base, test=True)
    if cfg.get("data", {}).get("standardize", False):
        mean = x.astype(np.float64).mean(axis=0).astype(np.float32)
        std = np.sqrt(((x.astype(np.float64) - mean) ** 2).mean(axis=0))
        std = np.where(std < 1e-6, 1.0, std).astype(np.float32)
        inv = (np.float32(1.0) / std).astype(np.float32)
        x = (x - mean) * inv
        if test is not None:
            test = ((test[0] - mean) * inv, test[1])

    init = read_safetensors(os.path.join(export, "init.safetensors"))
    own_dropout = os.environ.get("TORCH_OWN_DROPOUT", "") == "1"
    if "layer" in model_cfg:  # a list of layers: acan's model file has nn.Sequential's names
        net = sequential(model_cfg["layer"],
                         dropout_seed=None if own_dropout else int(train.get("seed", 42)))
        net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in init.items()}, strict=True)
        shape = model_cfg.get("input_shape", [1, 28, 28])
        x = x.reshape(x.shape[0], *shape)
        if test is not None:
            test = (test[0].reshape(test[0].shape[0], *shape), test[1])
    else:
        layers = []
        for i in range(len(widths) - 1):
            layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
            if i + 2 < len(widths):
                layers.append(act())
        net = torch.nn.Sequential(*layers)
        linears = [m for m in net if isinstance(m, torch.nn.Linear)]
        with torch.no_grad():
            for i, lin in enumerate(linears):
                lin.weight.copy_(torch.from_numpy(init[f"layers.{i}.weight"].copy()))
                lin.bias.copy_(torch.from_numpy(init[f"layers.{i}.bias"].copy()))

    rows = x.shape[0]
    order = np.fromfile(os.path.join(export, "order.bin"), dtype="<i4")
    if order.size != epochs * rows:
        raise SystemExit(f"order.bin has {order.size} entries, expected {epochs} x {rows}; "
                         "run bench/fashion_export with the same CONFIG")
    order = torch.from_numpy(order.reshape(epochs, rows).astype(np.int64))
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    steps_per_epoch = (rows + batch - 1) // batch
    acan_dropouts = [m for m in net.modules() if isinstance(m, AcanDropout)]
    start = time.perf_counter()
    step = 0
    for e in range(epochs):
        perm = order[e]
        for i in range(steps_per_epoch):
            idx = perm[i * batch:(i + 1) * batch]
            if decay_steps > 0:
                for g in opt.param_groups:
                    g["lr"] = lr * decay ** (step // decay_steps)
            for m in acan_dropouts:
                m.step = step
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            step += 1
    wall = time.perf_counter() - start
    if os.environ.get("TORCH_SAVE_STATE"):  # the trained weights, for a check against acan's
        np.savez(os.environ["TORCH_SAVE_STATE"],
                 **{k: v.detach().numpy() for k, v in net.state_dict().items()})

    out = {"threads": threads, "wall_s": wall, "epochs": epochs, "rows": rows,
           "dropout": "acan" if acan_dropouts else "torch"}
    net.eval()  # dropout off, as acan evaluates
    if test is not None:
        tx, ty = torch.from_numpy(test[0]), torch.from_numpy(test[1])
        with torch.no_grad():
            z = net(tx)
            out["test_loss"] = float(torch.nn.functional.cross_entropy(z, ty))
            pred = z.argmax(dim=1)
            out["test_accuracy"] = float((pred == ty).double().mean())
            out["per_class_accuracy"] = [
                float((pred[ty == c] == c).double().mean()) if int((ty == c).sum()) else 0.0
                for c in range(widths[-1])]
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
