"""torch_gpu_gemm.py - cuBLAS alone (torch.mm / torch.bmm, fp32, TF32 off) at the GEMM shapes of
bench_gpu_gemm.c, and the two side by side.

Usage: python3 bench/torch_gpu_gemm.py STRIX_LINES_FILE [repeats]
STRIX_LINES_FILE holds bench_gpu_gemm's output ("label m k n batch ta tb gflops" per line); this
script times the same shapes with torch on the GPU and prints one table:
label, shape, strix GFLOP/s, torch GFLOP/s, strix/torch. A benchmark, never a test.
"""
import sys
import time

import torch


def time_torch(m, k, n, batch, ta, tb, repeats):
    dev = "cuda"
    a_shape = (k, m) if ta else (m, k)
    b_shape = (n, k) if tb else (k, n)
    if batch > 1:
        a = torch.full((batch,) + a_shape, 0.5, device=dev)
        b = torch.full((batch,) + b_shape, 0.25, device=dev)
        op_a = a.transpose(1, 2) if ta else a
        op_b = b.transpose(1, 2) if tb else b
        run = lambda: torch.bmm(op_a, op_b)
    else:
        a = torch.full(a_shape, 0.5, device=dev)
        b = torch.full(b_shape, 0.25, device=dev)
        op_a = a.t() if ta else a
        op_b = b.t() if tb else b
        run = lambda: torch.mm(op_a, op_b)
    for _ in range(5):
        run()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeats):
        run()
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - t0) / repeats
    return 2.0 * m * k * n * batch / seconds * 1e-9


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    print(f"{'shape':<14} {'(m,k,n) x batch':<24} {'strix':>9} {'torch':>9} {'ratio':>6}"
          f"   GFLOP/s, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for line in open(sys.argv[1]):
        f = line.split()
        if len(f) != 8:
            continue
        label, (m, k, n, batch, ta, tb), strix = f[0], map(int, f[1:7]), float(f[7])
        ref = time_torch(m, k, n, batch, bool(ta), bool(tb), repeats)
        shape = f"({m},{k},{n}) x {batch}" + (" ta" if ta else "") + (" tb" if tb else "")
        print(f"{label:<14} {shape:<24} {strix:9.0f} {ref:9.0f} {strix / ref:6.2f}")


if __name__ == "__main__":
    main()
