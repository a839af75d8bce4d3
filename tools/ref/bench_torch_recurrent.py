#!/usr/bin/python3
"""bench_torch_recurrent.py - times torch.nn.LSTM / torch.nn.GRU training steps at the size of
bench/bench_recurrent.c and prints one line per module in its format, to put side by side:

    build/bench_recurrent --backend cpu-blas --threads 2
    /usr/bin/python3 tools/ref/bench_torch_recurrent.py --threads 2

A step: zero the gradients, y, _ = m(x) from a zero state (batch_first, x (B,T,I)), then
y.backward(dy) with a fixed dy (B,T,H): dx and every parameter gradient (x requires grad, as
strix computes dx). torch.set_num_threads(--threads); oneDNN/MKL paths as torch picks them on
the CPU. tok/s = B·T / (median step); cpu_ms/step the median process CPU time of a step (all
threads). A benchmark, never a test.
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn


def run(kind, args):
    torch.manual_seed(1337)
    cls = nn.LSTM if kind == "lstm" else nn.GRU
    m = cls(args.input, args.hidden, num_layers=args.layers, batch_first=True)
    x = (torch.rand(args.batch, args.seq, args.input) * 2 - 1).requires_grad_(True)
    dy = torch.rand(args.batch, args.seq, args.hidden) * 2 - 1
    times, cpu = [], []
    for step in range(args.warmup_steps + args.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        m.zero_grad(set_to_none=False)
        x.grad = None
        y, _ = m(x)
        y.backward(dy)
        if step >= args.warmup_steps:
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    ms, cpu_ms = 1e3 * statistics.median(times), 1e3 * statistics.median(cpu)
    params = sum(p.numel() for p in m.parameters())
    print(f"torch {torch.__version__} {kind} threads {torch.get_num_threads()} B {args.batch} "
          f"T {args.seq} I {args.input} H {args.hidden} L {args.layers} params {params} "
          f"ms/step {ms:.1f} tok/s {args.batch * args.seq / (ms / 1e3):.0f} "
          f"cpu_ms/step {cpu_ms:.1f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="both", choices=["lstm", "gru", "both"])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup-steps", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--input", type=int, default=256)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    for kind in (["lstm", "gru"] if args.mode == "both" else [args.mode]):
        run(kind, args)


if __name__ == "__main__":
    main()
