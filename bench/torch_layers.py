"""The torch.nn.Sequential an acan job's list of layers ([[model.layer]] tables) describes, with
the same parameter names and shapes as acan's model files ("0.weight" [out, in, kh, kw], ...).
Used by bench/torch_fashion.py and tests/e2e/torch_cnn.py."""
import sys

import numpy as np
import torch

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z):
    """SplitMix64's output function (src/nn/rng.h), on numpy uint64 (arithmetic mod 2^64)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _mix_seed(a, b):
    """acan's MixSeed(a, b): the second draw of a SplitMix64 seeded with a ^ (b * C)."""
    return _mix((a ^ (b * np.uint64(0xD1B54A32D192ED03))) + np.uint64(2) * _GOLDEN)


def acan_dropout_keeps(seed, step, rows, units, p):
    """acan's dropout mask (src/nn/conv.cc DropoutKeeps) for rows 0..rows-1 of the mini-batch of
    index `step`, units 0..units-1: True where the unit is kept. Unit u of row r keeps when the
    (u+1)-th draw of the stream MixSeed(MixSeed(seed ^ "dropout", step), r), as a 24-bit uniform
    float, is at least p."""
    with np.errstate(over="ignore"):
        s = _mix_seed(np.uint64(seed) ^ np.uint64(0x64726F706F7574), np.uint64(step))
        streams = _mix_seed(s, np.arange(rows, dtype=np.uint64))[:, None]
        units = np.arange(1, units + 1, dtype=np.uint64)[None, :]
        z = _mix(streams + units * _GOLDEN)
    u = (z >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    return u >= np.float32(p)


class AcanDropout(torch.nn.Module):
    """Dropout that draws acan's masks: set `step` (the mini-batch's index in the run) before each
    training forward. In eval mode it passes its input through, as torch.nn.Dropout does."""

    def __init__(self, p, seed):
        super().__init__()
        self.p, self.seed, self.step = p, seed, 0

    def forward(self, x):
        if not self.training or self.p <= 0:
            return x
        keeps = acan_dropout_keeps(self.seed, self.step, x.shape[0], x[0].numel(), self.p)
        scale = np.float32(1.0 / (1.0 - self.p))
        mask = torch.from_numpy(np.where(keeps, scale, np.float32(0)).astype(np.float32))
        return x * mask.reshape(x.shape)


def sequential(layers, dropout_seed=None):
    """The layers as a torch.nn.Sequential. With dropout_seed (the job's train.seed), dropout
    layers draw acan's masks (AcanDropout) rather than PyTorch's own."""
    out = []
    for i, l in enumerate(layers):
        t = l["type"]
        if t == "conv2d":
            k = l["kernel_size"]
            out.append(torch.nn.Conv2d(l["in_channels"], l["out_channels"],
                                       tuple(k) if isinstance(k, list) else k,
                                       stride=l.get("stride", 1), padding=l.get("padding", 0),
                                       bias=l.get("bias", True)))
        elif t in ("max_pool2d", "avg_pool2d"):
            k = l["kernel_size"]
            k = tuple(k) if isinstance(k, list) else k
            cls = torch.nn.MaxPool2d if t == "max_pool2d" else torch.nn.AvgPool2d
            out.append(cls(k, stride=l.get("stride", k), padding=l.get("padding", 0)))
        elif t == "flatten":
            out.append(torch.nn.Flatten())
        elif t == "linear":
            out.append(torch.nn.Linear(l["in_features"], l["out_features"],
                                       bias=l.get("bias", True)))
        elif t in ("relu", "tanh", "sigmoid"):
            out.append({"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh,
                        "sigmoid": torch.nn.Sigmoid}[t]())
        elif t == "dropout":
            p = l.get("p", 0.5)
            out.append(torch.nn.Dropout(p) if dropout_seed is None else AcanDropout(p, dropout_seed))
        else:
            sys.exit(f"FAIL: layer {i} has type {t!r}, which this test does not know")
    return torch.nn.Sequential(*out)
