#!/usr/bin/python3
"""recurrent_modules_ref.py - PyTorch goldens of the recurrent modules (strix/recurrent.h:
torch.nn.RNN with tanh and relu, LSTM with and without proj_size, GRU) for
tests/test_recurrent.c.

Run from the repository root with Debian's python3 (PyTorch 1.13):
    /usr/bin/python3 tools/ref/recurrent_modules_ref.py
It writes tests/golden/recurrent/<case>.bin (format: tools/ref/ops_ref.py's write_golden) and
tests/golden/recurrent/lstm_2l_bi_torch.st, the state dict of the lstm_2l_bi case's torch module
as a safetensors file (layers_ref.py's writer).

Each case is a torch module built after torch.manual_seed with its own reset_parameters init,
in float32 on the CPU. Arrays: x (batch_first (B,T,I) unless the case says time_major (T,B,I)),
h0 and c0 when the case gives them, dy, dh_n and dc_n (the random upstream gradients of output,
h_n and c_n: the loss is Σ y·dy + Σ h_n·dh_n + Σ c_n·dc_n), the outputs y, h_n, c_n, the
gradients dx, dh0, dc0, and "param.<name>" / "grad.<name>" for every parameter under torch's
names (strix declares them with an empty prefix). Sizes are odd on purpose (B=3, T=5, I=7,
H=6; proj_size 5 for the projection cases: h is (.., 5), c stays (.., 6)). The relu cases are
torch.nn.RNN(nonlinearity="relu").

The <kind>_adamw_* cases train for ADAMW_STEPS steps with torch.optim.AdamW(m.parameters(),
lr=ADAMW_LR) and its other defaults (betas 0.9, 0.999, eps 1e-8, weight_decay 0.01 on every
parameter), the loss Σ y·dy + Σ h_n·dh_n (+ Σ c_n·dc_n) with fixed dy, dh_n, dc_n and zero
initial states: arrays x, dy, dh_n, dc_n, lr, "param.<name>" (the initial values), "final.<name>"
(after the last step) and loss (the loss at each step, before its update).

This script does not test strix and is not needed to run the tests.
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
import ops_ref  # noqa: E402
from ops_ref import write_golden, randn  # noqa: E402
from layers_ref import save_state_dict  # noqa: E402

OUT_DIR = os.path.join("tests", "golden", "recurrent")
SEED = 2024
B, T, I, H = 3, 5, 7, 6
PROJ = 5
ADAMW_LR = 0.01
ADAMW_STEPS = 10
CLASSES = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}


def case(name, kind, layers, bidirectional, bias, with_h0, batch_first=True, seed=0, **extra):
    """extra: nonlinearity="relu" (rnn) or proj_size=PROJ (lstm), passed to the torch module."""
    torch.manual_seed(SEED + seed)
    m = CLASSES[kind](I, H, num_layers=layers, bias=bias, batch_first=batch_first,
                      bidirectional=bidirectional, **extra)
    dirs = 2 if bidirectional else 1
    hr = extra.get("proj_size", 0) or H
    x = randn(B, T, I) if batch_first else randn(T, B, I)
    xg = x.clone().requires_grad_(True)
    arrays = [("x", x)]
    state = None
    h0 = c0 = None
    if with_h0:
        h0 = randn(layers * dirs, B, hr).requires_grad_(True)
        arrays.append(("h0", h0.detach()))
        if kind == "lstm":
            c0 = randn(layers * dirs, B, H).requires_grad_(True)
            arrays.append(("c0", c0.detach()))
            state = (h0, c0)
        else:
            state = h0
    y, st = m(xg, state)
    hn, cn = (st if kind == "lstm" else (st, None))
    dy = randn(*y.shape)
    dhn = randn(*hn.shape)
    loss = (y * dy).sum() + (hn * dhn).sum()
    arrays += [("dy", dy), ("dh_n", dhn)]
    if cn is not None:
        dcn = randn(*cn.shape)
        loss = loss + (cn * dcn).sum()
        arrays.append(("dc_n", dcn))
    loss.backward()
    arrays += [("y", y.detach()), ("h_n", hn.detach())]
    if cn is not None:
        arrays.append(("c_n", cn.detach()))
    arrays.append(("dx", xg.grad))
    if h0 is not None:
        arrays.append(("dh0", h0.grad))
    if c0 is not None:
        arrays.append(("dc0", c0.grad))
    for pname, p in m.named_parameters():
        arrays += [("param." + pname, p.detach()), ("grad." + pname, p.grad)]
    write_golden(name, arrays, generator="tools/ref/recurrent_modules_ref.py", seed=SEED + seed,
                 out_dir=OUT_DIR)
    return m


def adamw_case(name, kind, layers, bidirectional, seed, **extra):
    torch.manual_seed(SEED + seed)
    m = CLASSES[kind](I, H, num_layers=layers, batch_first=True, bidirectional=bidirectional,
                      **extra)
    x = randn(B, T, I)
    arrays = [("x", x), ("lr", torch.tensor(ADAMW_LR))]
    for pname, p in m.named_parameters():
        arrays.append(("param." + pname, p.detach().clone()))
    opt = torch.optim.AdamW(m.parameters(), lr=ADAMW_LR)
    dy = dhn = dcn = None
    losses = []
    for _ in range(ADAMW_STEPS):
        opt.zero_grad()
        y, st = m(x)
        hn, cn = (st if kind == "lstm" else (st, None))
        if dy is None:
            dy, dhn = randn(*y.shape), randn(*hn.shape)
            dcn = randn(*cn.shape) if cn is not None else None
        loss = (y * dy).sum() + (hn * dhn).sum()
        if cn is not None:
            loss = loss + (cn * dcn).sum()
        losses.append(loss.item())
        loss.backward()
        opt.step()
    arrays += [("dy", dy), ("dh_n", dhn)]
    if dcn is not None:
        arrays.append(("dc_n", dcn))
    arrays.append(("loss", torch.tensor(losses)))
    for pname, p in m.named_parameters():
        arrays.append(("final." + pname, p.detach()))
    write_golden(name, arrays, generator="tools/ref/recurrent_modules_ref.py", seed=SEED + seed,
                 out_dir=OUT_DIR)


def main():
    ops_ref.OUT_DIR = OUT_DIR
    case("lstm_1l", "lstm", 1, False, True, True, seed=1)
    lstm = case("lstm_2l_bi", "lstm", 2, True, True, True, seed=2)
    save_state_dict(lstm, os.path.join(OUT_DIR, "lstm_2l_bi_torch.st"))
    case("lstm_2l_nobias", "lstm", 2, False, False, False, seed=3)
    case("lstm_bi_time_major", "lstm", 1, True, True, True, batch_first=False, seed=4)
    case("gru_1l", "gru", 1, False, True, True, seed=5)
    case("gru_2l_bi", "gru", 2, True, True, True, seed=6)
    case("gru_2l_nobias", "gru", 2, False, False, False, seed=7)
    case("gru_bi_time_major", "gru", 1, True, True, False, batch_first=False, seed=8)
    case("rnn_1l", "rnn", 1, False, True, True, seed=9)
    case("rnn_2l_bi", "rnn", 2, True, True, True, seed=10)
    case("rnn_1l_nobias", "rnn", 1, False, False, False, seed=11)
    case("rnn_relu_1l", "rnn", 1, False, True, True, seed=12, nonlinearity="relu")
    case("rnn_relu_2l_bi", "rnn", 2, True, True, True, seed=13, nonlinearity="relu")
    case("lstm_proj_1l", "lstm", 1, False, True, True, seed=14, proj_size=PROJ)
    case("lstm_proj_2l_bi", "lstm", 2, True, True, True, seed=15, proj_size=PROJ)
    case("lstm_proj_bi_time_major", "lstm", 1, True, False, True, batch_first=False, seed=16,
         proj_size=PROJ)
    adamw_case("lstm_adamw_2l_bi", "lstm", 2, True, seed=17)
    adamw_case("gru_adamw_2l_bi", "gru", 2, True, seed=18)
    adamw_case("lstm_proj_adamw", "lstm", 1, False, seed=19, proj_size=PROJ)


if __name__ == "__main__":
    main()
