#!/usr/bin/python3
"""A model acan trained from a list of layers, loaded into the torch.nn.Sequential the job file
describes with load_state_dict(strict=True), evaluates on the job's test split to acan's own test
loss and accuracy: the names, shapes and layouts are PyTorch's, and acan's forward pass is
PyTorch's (an independent implementation of every layer).

Usage: /usr/bin/python3 tests/e2e/torch_cnn.py JOB_TOML MODEL_SAFETENSORS SUMMARY_JSON
Exits 77 (skipped) when PyTorch is not installed."""
import json
import os
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
from torch_layers import sequential  # noqa: E402

job_path, model_path, summary_path = sys.argv[1:4]
job = tomllib.load(open(job_path, "rb"))



model = sequential(job["model"]["layer"])
state = {k: torch.from_numpy(v.copy()) for k, v in read_safetensors(model_path).items()}
model.load_state_dict(state, strict=True)  # raises on a missing, surplus or mis-shaped tensor
model.eval()

data = job["data"]
assert data["source"] == "fashion-mnist", "this test reads Fashion-MNIST's test split"
x = read_idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", 3)
y = read_idx("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz", 1).astype(np.int64)
limit = data.get("test_limit", 0)
if limit:
    x, y = x[:limit], y[:limit]
x = torch.from_numpy(x.astype(np.float32) / np.float32(255)).reshape(-1, 1, 28, 28)
with torch.no_grad():
    z = model(x)
    loss = torch.nn.functional.cross_entropy(z, torch.from_numpy(y)).item()
    accuracy = (z.argmax(1).numpy() == y).mean()

summary = json.load(open(summary_path))
acan_loss, acan_accuracy = summary["test_loss"], summary["test_accuracy"]
rows = len(y)
print(f"{rows} test rows: acan loss {acan_loss:.6f}, accuracy {acan_accuracy:.4f}; "
      f"PyTorch on acan's model (strict load) loss {loss:.6f}, accuracy {accuracy:.4f}")
# The same function in float32 by two implementations: the loss to rounding, and at most one row
# whose two largest logits are within rounding of each other may flip.
if abs(loss - acan_loss) > 1e-4 * max(1.0, abs(loss)):
    sys.exit(f"FAIL: test loss {acan_loss} (acan) against {loss} (PyTorch)")
if abs(accuracy - acan_accuracy) * rows > 1.5:
    sys.exit(f"FAIL: test accuracy {acan_accuracy} (acan) against {accuracy} (PyTorch)")
print("ok: acan's model loads into torch.nn.Sequential (strict) and evaluates the same")
