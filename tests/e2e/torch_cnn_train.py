#!/usr/bin/python3
"""acan's training of a list of layers against PyTorch's, step for step: from the same initial
weights (drawn here by PyTorch, given to acan as model.init), on the same rows in the same order
(data.shuffle = false), with the same dropout masks (bench/torch_layers.py AcanDropout draws
acan's), SGD with momentum and the learning rate's step decay, PyTorch trains the job's steps and
every tensor of acan's model must equal PyTorch's to float rounding: within 1e-3 of how far the
tensor moved. An independent implementation of every layer's forward and backward pass, of the
update, and of how acan cuts its parameters into tasks (a wrong layout of any tensor moves it
by the size of a step or more).

Usage: /usr/bin/python3 tests/e2e/torch_cnn_train.py init JOB_TOML INIT_SAFETENSORS
       /usr/bin/python3 tests/e2e/torch_cnn_train.py check JOB_TOML INIT_SAFETENSORS MODEL_SAFETENSORS
Exits 77 (skipped) when PyTorch is not installed."""
import json
import os
import struct
import sys
import tomllib

try:
    import numpy as np
    import torch
except ImportError:
    print("skipped: python3-torch (and NumPy) are not installed")
    sys.exit(77)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../bench"))
from torch_fashion import read_idx, read_safetensors  # noqa: E402
from torch_layers import AcanDropout, sequential  # noqa: E402


def write_safetensors(path, tensors):
    """F32 tensors in the safetensors format (an 8-byte header length, a JSON header, the data)."""
    header, blobs, at = {}, [], 0
    for name, v in tensors.items():
        b = np.ascontiguousarray(v, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))



def main():
    mode, job_path, init_path = sys.argv[1:4]
    job = tomllib.load(open(job_path, "rb"))
    layers = job["model"]["layer"]
    if mode == "init":
        torch.manual_seed(20261207)
        net = sequential(layers)
        write_safetensors(init_path, {k: v.detach().numpy() for k, v in net.state_dict().items()})
        return
    model_path = sys.argv[4]
    train, data = job["train"], job["data"]
    assert data["source"] == "fashion-mnist" and data.get("shuffle") is False, data
    init = read_safetensors(init_path)
    net = sequential(layers, dropout_seed=int(train.get("seed", 42)))
    net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in init.items()}, strict=True)
    net.train()
    rows = data["limit"]
    x = read_idx("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", 3)[:rows]
    y = read_idx("/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz", 1)[:rows]
    x = torch.from_numpy(x.astype(np.float32) * np.float32(1.0 / 255.0)).reshape(rows, 1, 28, 28)
    y = torch.from_numpy(y.astype(np.int64))
    lr, batch = float(train["lr"]), train["batch"]
    decay, decay_steps = float(train.get("lr_decay", 1.0)), train.get("lr_decay_steps", 0)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=float(train.get("momentum", 0.0)))
    dropouts = [m for m in net.modules() if isinstance(m, AcanDropout)]
    steps_per_epoch = (rows + batch - 1) // batch
    step = 0
    for _ in range(train["epochs"]):
        for i in range(steps_per_epoch):
            for g in opt.param_groups:
                g["lr"] = lr * decay ** (step // decay_steps) if decay_steps > 0 else lr
            for m in dropouts:
                m.step = step
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(net(x[i * batch:(i + 1) * batch]),
                                                     y[i * batch:(i + 1) * batch])
            loss.backward()
            opt.step()
            step += 1
    acan = read_safetensors(model_path)
    if set(acan) != set(init):
        sys.exit(f"FAIL: acan's model has tensors {sorted(acan)}, PyTorch's {sorted(init)}")
    failed = []
    for name, t in net.state_dict().items():
        t = t.numpy()
        moved = float(np.abs(t - init[name]).max())
        off = float(np.abs(acan[name] - t).max())
        print(f"{name:10s} {str(list(t.shape)):16s} moved {moved:.3e}, acan - PyTorch {off:.3e}")
        if not moved > 0 or off > 1e-3 * moved:
            failed.append(name)
    if failed:
        sys.exit(f"FAIL: after {step} steps acan's {failed} differ from PyTorch's by more than "
                 "1e-3 of how far they moved")
    print(f"ok: {step} steps of acan equal PyTorch's to rounding, every tensor")


if __name__ == "__main__":
    main()
