#!/usr/bin/python3
"""An independent reference for acan's training numbers.

For small MLP jobs on CSV data that this script writes, `acan train` runs every partition strategy
the job parser accepts, and the weights it writes (model.safetensors) are compared with plain
mini-batch SGD written here in NumPy (float64): forward, backward, momentum, learning-rate decay,
mse and softmax cross-entropy, each activation. Nothing here comes from acan but the job file's
documented meaning (docs/nn.md) and, for the initial weights, the seeded scheme that model.cc and
rng.h describe (SplitMix64, xavier/kaiming uniform bounds), re-derived here and checked on a
0-epoch run. The safetensors file is parsed by hand.

acan computes in float32 and this reference in float64, so weights are compared with a tolerance
(RTOL, ATOL); the script also checks that the tolerance is tight enough to notice a reference
whose learning rate is off by 0.1%, so a tolerance loose enough to pass wrong numbers fails.

Usage: numpy_reference.py ACAN_BINARY. Exit 0 on PASS; a failure prints what differed.
"""
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    sys.exit("FAIL: NumPy is missing (scripts/install-deps.sh --tests installs python3-numpy)")

RTOL = 1e-4
ATOL = 1e-5
MASK = (1 << 64) - 1


# --- acan's initial weights: SplitMix64 (Steele et al., the public constants), seeded as rng.h
# mixes a seed, drawn as model.cc draws them: row-major weights, layer by layer, biases zero.
class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


def mix_seed(a, b):
    r = SplitMix64(a ^ ((b * 0xD1B54A32D192ED03) & MASK))
    r.next()
    return r.next()


def initial_model(widths, scheme, seed):
    """The weights in float64, each a uniform draw in [-a, a), a = sqrt(6 / fan)."""
    rng = SplitMix64(mix_seed(seed, 0x1417))
    model = {}
    for l in range(len(widths) - 1):
        n_in, n_out = widths[l], widths[l + 1]
        fan = n_in + n_out if scheme == "xavier_uniform" else n_in
        a = float(np.float32(math.sqrt(6.0 / fan)))
        u = np.array([(rng.next() >> 40) / 16777216.0 for _ in range(n_out * n_in)])
        model[f"layers.{l}.weight"] = (-a + 2 * a * u).reshape(n_out, n_in)
        model[f"layers.{l}.bias"] = np.zeros(n_out)
    return model


# --- plain mini-batch SGD, float64
ACTIVATIONS = {
    "tanh": (np.tanh, lambda z, h: 1 - h * h),
    "relu": (lambda z: np.maximum(z, 0), lambda z, h: (z > 0).astype(float)),
    "sigmoid": (lambda z: 1 / (1 + np.exp(-z)), lambda z, h: h * (1 - h)),
    "identity": (lambda z: z, lambda z, h: np.ones_like(z)),
}


def gradients(model, layers, activation, loss, x, t):
    """d loss / d parameter for one mini-batch (the loss is a mean over its rows)."""
    f, df = ACTIVATIONS[activation]
    n = len(layers) - 1
    hs, zs = [x], []
    for l in range(n):
        z = hs[-1] @ model[f"layers.{l}.weight"].T + model[f"layers.{l}.bias"]
        zs.append(z)
        hs.append(z if l == n - 1 else f(z))
    y, rows = hs[-1], x.shape[0]
    if loss == "mse":  # (1/B) sum_b sum_o 1/2 (y - t)^2
        dz = (y - t) / rows
    else:  # (1/B) sum_b -log softmax(z_b)[label_b]
        p = np.exp(y - y.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(rows), t.astype(int)] -= 1
        dz = p / rows
    grads = {}
    for l in reversed(range(n)):
        grads[f"layers.{l}.weight"] = dz.T @ hs[l]
        grads[f"layers.{l}.bias"] = dz.sum(axis=0)
        if l > 0:
            dz = (dz @ model[f"layers.{l}.weight"]) * df(zs[l - 1], hs[l])
    return grads


def train(model, job, x, t, lr_scale=1.0):
    """Epochs of mini-batches in file order (shuffle = false), the last one short; momentum
    v = m v + g, w -= lr v; step s uses lr * decay^floor(s / decay_steps), rounded to float32."""
    model = {k: v.copy() for k, v in model.items()}
    velocity = {k: np.zeros_like(v) for k, v in model.items()}
    batch, rows = job["batch"], x.shape[0]
    step = 0
    for _ in range(job["epochs"]):
        for first in range(0, rows, batch):
            g = gradients(model, job["layers"], job["activation"], job["loss"],
                          x[first:first + batch], t[first:first + batch])
            lr = job["lr"]
            if job["lr_decay_steps"] > 0:
                lr *= job["lr_decay"] ** (step // job["lr_decay_steps"])
            lr = float(np.float32(lr)) * lr_scale
            for k in model:
                velocity[k] = job["momentum"] * velocity[k] + g[k]
                model[k] -= lr * velocity[k]
            step += 1
    return model


# --- the files acan reads and writes
def read_safetensors(path):
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (path, name, info["dtype"])
        begin, end = info["data_offsets"]
        data = np.frombuffer(blob[8 + n + begin:8 + n + end], dtype="<f4").astype(np.float64)
        tensors[name] = data.reshape(info["shape"])
    return tensors


def write_csv(path, x, t):
    """Features, then the targets (float32) or the label (an integer); 9 significant digits
    give back the same float32 when read."""
    with open(path, "w") as f:
        for features, target in zip(x, t):
            cells = [f"{v:.9g}" for v in features]
            if t.dtype == np.int64:
                cells.append(str(int(target)))
            else:
                cells += [f"{v:.9g}" for v in np.atleast_1d(target)]
            f.write(",".join(cells) + "\n")


def job_toml(job, csv_path, strategy, task_size, stages, epochs):
    return f"""[model]
layers = {job["layers"]}
activation = "{job["activation"]}"
loss = "{job["loss"]}"
init = "{job["init"]}"
[data]
source = "csv"
path = "{csv_path}"
shuffle = false
[train]
epochs = {epochs}
batch = {job["batch"]}
lr = {job["lr"]}
momentum = {job["momentum"]}
lr_decay = {job["lr_decay"]}
lr_decay_steps = {job["lr_decay_steps"]}
seed = {job["seed"]}
[partition]
strategy = "{strategy}"
task_size = {task_size}
stages = {stages}
[runtime]
handlers = 3
window = 1
space = "mem:"
"""


def acan_train(acan, work, name, toml):
    path = os.path.join(work, name + ".toml")
    with open(path, "w") as f:
        f.write(toml)
    out = os.path.join(work, name)
    run = subprocess.run([acan, "train", path, "--out", out, "--quiet"], capture_output=True,
                         text=True, timeout=240)
    if run.returncode != 0:
        raise SystemExit(f"FAIL: acan train {name}: exit {run.returncode}: {run.stderr.strip()}")
    return read_safetensors(os.path.join(out, "model.safetensors"))


def strategies_acan_knows(acan, work):
    """The strategies the job parser accepts, from its error for an unknown one."""
    path = os.path.join(work, "unknown.toml")
    with open(path, "w") as f:
        f.write('[partition]\nstrategy = "no-such-strategy"\n')
    run = subprocess.run([acan, "train", path, "--out", os.path.join(work, "unknown")],
                         capture_output=True, text=True, timeout=60)
    found = re.search(r"use one of: ([a-z_| -]+)", run.stderr)
    if run.returncode == 0 or not found:
        raise SystemExit(f"FAIL: no list of strategies in: {run.stderr.strip()}")
    return {s.strip() for s in found.group(1).split("|")}


def worst(got, want):
    """The largest |got - want| / (ATOL + RTOL |want|) over every tensor (<= 1: within)."""
    assert sorted(got) == sorted(want), (sorted(got), sorted(want))
    return max(float(np.max(np.abs(got[k] - want[k]) / (ATOL + RTOL * np.abs(want[k]))))
               for k in want)


# Jobs between them use every activation, both losses, both random inits, momentum and decay,
# and a short last mini-batch; each strategy runs with a task size that splits unevenly.
JOBS = [
    dict(name="tanh_mse", layers=[6, 7, 5, 2], activation="tanh", loss="mse",
         init="xavier_uniform", rows=30, batch=4, epochs=2, lr=0.1, momentum=0.5, lr_decay=0.8,
         lr_decay_steps=5, seed=11),
    dict(name="relu_ce", layers=[6, 9, 3], activation="relu", loss="softmax_cross_entropy",
         init="kaiming_uniform", rows=23, batch=5, epochs=2, lr=0.2, momentum=0.0, lr_decay=1.0,
         lr_decay_steps=0, seed=5),
    dict(name="sigmoid_mse", layers=[5, 8, 6, 1], activation="sigmoid", loss="mse",
         init="xavier_uniform", rows=17, batch=3, epochs=3, lr=0.5, momentum=0.9, lr_decay=1.0,
         lr_decay_steps=0, seed=3),
    dict(name="identity_ce", layers=[4, 6, 4], activation="identity",
         loss="softmax_cross_entropy", init="xavier_uniform", rows=20, batch=6, epochs=2, lr=0.3,
         momentum=0.3, lr_decay=0.5, lr_decay_steps=4, seed=8),
]
# (strategy, task_size, stages): each strategy with a task size that splits unevenly (tiles of 3
# on widths that are not multiples of 3, micro-batches of 2 rows, 2-row micro-batches over 2
# stages, chains of 3 mini-batches) and with the automatic one (a task a mini-batch, one tile a
# layer, a stage a layer, a chain an epoch).
STRATEGIES = [("data", 2, 0), ("data", 0, 0), ("tiles", 3, 0), ("tiles", 0, 0),
              ("pipeline", 2, 2), ("pipeline", 0, 0), ("chain", 3, 0), ("chain", 0, 0)]


def data_for(job, rng):
    x = rng.uniform(-1, 1, size=(job["rows"], job["layers"][0])).astype(np.float32)
    mix = rng.normal(size=(job["layers"][0], job["layers"][-1]))
    if job["loss"] == "mse":
        t = np.sin(2 * x.astype(np.float64) @ mix).astype(np.float32)
    else:
        t = np.argmax(x.astype(np.float64) @ mix, axis=1).astype(np.int64)
    return x, t


def main():
    acan = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory(prefix="acan-numpy-") as work:
        known = strategies_acan_knows(acan, work)
        covered = {strategy for strategy, _, _ in STRATEGIES}
        if known != covered:
            raise SystemExit(f"FAIL: acan knows the strategies {sorted(known)}; this reference "
                             f"covers {sorted(covered)}: cover the new ones")
        rng = np.random.default_rng(42)
        for job in JOBS:
            x, t = data_for(job, rng)
            csv_path = os.path.join(work, job["name"] + ".csv")
            write_csv(csv_path, x, t)
            x64, t64 = x.astype(np.float64), t.astype(np.float64)
            if job["loss"] == "mse" and t64.ndim == 1:
                t64 = t64[:, None]
            init = initial_model(job["layers"], job["init"], job["seed"])
            # The initial weights: 0 epochs writes them as they are. Within a float32 rounding of
            # the draw (a compiler may fuse lo + (hi - lo) u), biases exactly zero.
            got = acan_train(acan, work, job["name"] + "_init",
                             job_toml(job, csv_path, "data", 0, 0, 0))
            for k, want in init.items():
                if got[k].shape != want.shape or np.max(np.abs(got[k] - want), initial=0) > \
                        2 ** -23 * np.max(np.abs(want), initial=0) or \
                        (k.endswith(".bias") and np.any(got[k] != 0)):
                    failures.append(f"{job['name']}: initial {k} is not {job['init']} "
                                    f"seeded {job['seed']}")
            want = train(init, job, x64, t64)
            # The check can fail: a learning rate 0.1% off must be outside the tolerance.
            off = train(init, job, x64, t64, lr_scale=1.001)
            if worst(off, want) <= 1:
                failures.append(f"{job['name']}: the tolerance does not notice a 0.1% error in "
                                f"the learning rate ({worst(off, want):.2f})")
            moved = max(float(np.max(np.abs(want[k] - init[k]))) for k in want)
            print(f"{job['name']}: weights move up to {moved:.3f}; a 0.1% error in the learning "
                  f"rate is {worst(off, want):.1f} times the tolerance")
            for strategy, task_size, stages in STRATEGIES:
                run = f"{strategy} task_size={task_size} stages={stages}"
                got = acan_train(acan, work, f"{job['name']}_{strategy}_{task_size}",
                                 job_toml(job, csv_path, strategy, task_size, stages,
                                          job["epochs"]))
                w = worst(got, want)
                print(f"  {run:34} worst |acan - numpy| = {w:.3f} of the tolerance")
                if w > 1:
                    failures.append(f"{job['name']} {run}: acan's weights differ from NumPy's "
                                    f"by {w:.1f} times the tolerance")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print(f"PASS: {len(JOBS)} jobs x {len(STRATEGIES)} partitions within rtol {RTOL}, "
          f"atol {ATOL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
