#!/usr/bin/env python3
"""PyTorch side of bench/zoo_train.sh: the two layer-zoo training steps of bench/bench_zoo.c.

  mlp: Linear(256,512) ReLU Linear(512,512) ReLU Linear(512,10), batch 64.
  cnn: Conv2d(3,32,3,p=1) BN ReLU MaxPool2 -> Conv2d(32,64,3,p=1) BN ReLU MaxPool2 -> Flatten ->
       Linear(64*8*8,10), input 32x3x32x32.
A step is forward, mean cross-entropy, zero_grad, backward and one AdamW step (lr 1e-3, weight
decay 0.01), fp32, eager mode, training mode. Inputs are fixed N(0,1) tensors and random labels.
Prints one line per model in the format of bench_zoo:
  `torch <version> <model> threads <n> ms/step <median> maxrss_mb <mb> loss <last>`.
Written for strix.
"""
import argparse
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp():
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                         nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 8 * 8, 10))


def bench(name, model, x, y, steps, warmup):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    model.train()
    times = []
    loss = None
    for step in range(warmup + steps):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step >= warmup:
            times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1e3
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"torch {torch.__version__} {name} threads {torch.get_num_threads()} ms/step {ms:.3f} "
          f"maxrss_mb {rss:.0f} loss {loss.item():.4f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="both", choices=["mlp", "cnn", "both"])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1337)
    if args.model in ("mlp", "both"):
        x = torch.randn(64, 256)
        y = torch.randint(0, 10, (64,))
        bench("mlp", mlp(), x, y, args.steps, args.warmup_steps)
    if args.model in ("cnn", "both"):
        x = torch.randn(32, 3, 32, 32)
        y = torch.randint(0, 10, (32,))
        bench("cnn", cnn(), x, y, args.steps, args.warmup_steps)


if __name__ == "__main__":
    main()
