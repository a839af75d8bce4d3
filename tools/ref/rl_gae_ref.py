#!/usr/bin/env python3
"""rl_gae_ref.py - the generalized advantage estimation golden of tests/test_rl_env.c.

Run from the repository root with PyTorch and numpy (Debian's python3-torch, or any venv with
torch), e.g.:
    python3 tools/ref/rl_gae_ref.py
It writes tests/golden/rl/gae.bin in the STRXGLD1 format of tools/ref/ops_ref.py (read by
tests/testlib.h): one rollout of T = 16 steps of N = 3 environments, arrays (T, N) time-major:
    rewards, values, next_values, terminated, ended   inputs of strix_gae
    gamma, lambda                                     scalars
    advantages, returns                               expected outputs
Environment 0 terminates at t = 4 and is truncated at t = 10; environment 1 is terminated and
truncated at once at t = 7 (ended and terminated) and truncated at t = 12; environment 2 never
ends. next_values is the value of the true next observation: values[t + 1] inside an episode, an
independent draw (the final observation's value) where an episode ended and at t = T - 1.
The expected outputs are the formula of include/strix/rl.h transcribed in PyTorch (float32
tensors, t descending, the header's order of operations: CleanRL's loop with separate
terminated/ended flags); the script checks them against the same loop in float64 (they agree to
1e-5).
This script does not test anything and is not needed to run the tests.
"""
import os
import struct

import numpy as np
import torch

OUT = os.path.join("tests", "golden", "rl", "gae.bin")
T, N = 16, 3
GAMMA, LAMBDA = 0.99, 0.95


def write_golden(path, arrays, note):
    """arrays: list of (name, array or number), stored as float32 (ops_ref.write_golden's format,
    written with numpy instead of torch)."""
    note = note.encode()
    out = bytearray(b"STRXGLD1")
    out += struct.pack("<I", len(note)) + note
    out += struct.pack("<I", len(arrays))
    for name, value in arrays:
        a = np.ascontiguousarray(np.asarray(value, dtype=np.float32))
        if a.ndim == 0:
            a = a.reshape(1)
        raw = name.encode()
        out += struct.pack("<I", len(raw)) + raw
        out += struct.pack("<I", a.ndim)
        out += struct.pack(f"<{a.ndim}q", *a.shape)
        out += a.astype("<f4").tobytes()
    with open(path, "wb") as f:
        f.write(out)
    return len(out)


def gae(rewards, values, next_values, terminated, ended, gamma, lam, dtype):
    """δ_t = r_t + γ·V'_t·(1 − terminated_t) − V_t; A_t = δ_t + γλ·(1 − ended_t)·A_{t+1}."""
    r, v, nv, te, en = (torch.tensor(np.asarray(x), dtype=dtype) for x in
                        (rewards, values, next_values, terminated, ended))
    gamma, lam = torch.tensor(gamma, dtype=dtype), torch.tensor(lam, dtype=dtype)
    gl = gamma * lam
    adv = torch.zeros((T, N), dtype=dtype)
    last = torch.zeros(N, dtype=dtype)
    for t in reversed(range(T)):
        delta = r[t] + gamma * nv[t] * (1 - te[t]) - v[t]
        last = delta + gl * (1 - en[t]) * last
        adv[t] = last
    return adv.numpy(), (adv + v).numpy()


def main():
    rng = np.random.default_rng(7)
    rewards = rng.normal(0.0, 1.0, (T, N)).astype(np.float32)
    values = rng.normal(0.0, 2.0, (T + 1, N)).astype(np.float32)
    final = rng.normal(0.0, 2.0, (T, N)).astype(np.float32)  # values of final observations
    terminated = np.zeros((T, N), dtype=np.float32)
    truncated = np.zeros((T, N), dtype=np.float32)
    terminated[4, 0] = 1
    truncated[10, 0] = 1
    terminated[7, 1] = truncated[7, 1] = 1
    truncated[12, 1] = 1
    ended = np.maximum(terminated, truncated)
    next_values = values[1:].copy()
    next_values[ended == 1] = final[ended == 1]
    next_values[T - 1] = final[T - 1]
    values = values[:T]

    adv, ret = gae(rewards, values, next_values, terminated, ended, GAMMA, LAMBDA, torch.float32)
    adv64, ret64 = gae(rewards, values, next_values, terminated, ended, GAMMA, LAMBDA,
                       torch.float64)
    err = max(np.abs(adv - adv64).max(), np.abs(ret - ret64).max())
    assert err < 1e-5, err
    size = write_golden(OUT, [("rewards", rewards), ("values", values),
                              ("next_values", next_values), ("terminated", terminated),
                              ("ended", ended), ("gamma", GAMMA), ("lambda", LAMBDA),
                              ("advantages", adv), ("returns", ret)],
                        f"tools/ref/rl_gae_ref.py; torch {torch.__version__}, numpy {np.__version__}; "
                        "seed 7")
    print(f"{OUT}: {size} bytes, float32/float64 agreement {err:.1e}")


if __name__ == "__main__":
    main()
