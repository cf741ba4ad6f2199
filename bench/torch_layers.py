"""The torch.nn.Sequential an acan job's list of layers ([[model.layer]] tables) describes, with
the same parameter names and shapes as acan's model files ("0.weight" [out, in, kh, kw], ...).
Used by bench/torch_fashion.py and tests/e2e/torch_cnn.py."""
import sys

import torch


def sequential(layers):
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
            out.append(torch.nn.Dropout(l.get("p", 0.5)))
        else:
            sys.exit(f"FAIL: layer {i} has type {t!r}, which this test does not know")
    return torch.nn.Sequential(*out)
