#!/usr/bin/python3
"""PyTorch on one process for scale, beside bench/wide_layer.sh: the same layers (an MLP with ReLU,
softmax cross-entropy, SGD with momentum), the same batch, synthetic inputs, `threads` threads.

Prints one line: `torch_wide samples_per_s=<x> steps=<n> peak_rss_kib=<VmHWM>` (the kernel's
count from /proc/self/status, read after the last step).
Run as: /usr/bin/python3 bench/torch_wide.py LAYERS BATCH STEPS THREADS   (LAYERS: 1024,8192,8192,10)
"""
import sys
import time

import torch


def main():
    widths = [int(w) for w in sys.argv[1].split(",")]
    batch, steps, threads = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    torch.manual_seed(7)
    layers = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        layers.append(torch.nn.Linear(a, b))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, widths[0])
    t = torch.randint(0, widths[-1], (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), t).backward()
        opt.step()

    step()  # the velocities are made on the first step
    start = time.perf_counter()
    for _ in range(steps):
        step()
    took = time.perf_counter() - start
    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    print(f"torch_wide samples_per_s={steps * batch / took:.1f} steps={steps} peak_rss_kib={hwm}")


if __name__ == "__main__":
    main()
