#!/usr/bin/python3
"""PyTorch baseline for bench/nn_benchmark.cc: the same models, one thread.

Prints one line per model: `torch_<name> samples_per_s=<x>`.
Run as: OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_mlp.py
"""
import sys
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)


def measure(model, loss_fn, x, t, batch, seconds):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    n = x.shape[0]
    steps = n // batch

    def step(i):
        j = (i % steps) * batch
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[j:j + batch]), t[j:j + batch])
        loss.backward()
        opt.step()

    for i in range(5):
        step(i)
    done, i, start = 0, 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step(i)
        i += 1
        done += batch
    return done / (time.perf_counter() - start)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    mlp = torch.nn.Sequential(
        torch.nn.Linear(784, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10))
    x = torch.rand(4096, 784)
    t = torch.randint(0, 10, (4096,))
    rate = measure(mlp, torch.nn.CrossEntropyLoss(), x, t, 64, seconds)
    print(f"torch_mlp samples_per_s={rate:.1f}", flush=True)

    toy = torch.nn.Sequential(torch.nn.Linear(44, 44), torch.nn.Tanh(), torch.nn.Linear(44, 1))
    x = torch.rand(100, 44) * 2 - 1
    t = torch.rand(100, 1)
    rate = measure(toy, torch.nn.MSELoss(), x, t, 1, seconds)
    print(f"torch_toy samples_per_s={rate:.1f}", flush=True)


if __name__ == "__main__":
    main()
