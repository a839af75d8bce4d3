#!/usr/bin/python3
"""recurrent_lrp_ref.py - goldens of the LRP of the recurrent modules (strix_rnn_relevance,
Arras et al. 2019 "Explaining and interpreting LSTMs") for tests/test_recurrent.c.

Run from the repository root with Debian's python3 (PyTorch 1.13):
    /usr/bin/python3 tools/ref/recurrent_lrp_ref.py
It writes tests/golden/recurrent/<case>.bin (format: tools/ref/ops_ref.py's write_golden).

An independent transcription of the rule in float64 numpy, per term (Σ_k x_j·W_kj/stab(z_k)·R_k,
not strix's gradient×input form), on a torch.nn.LSTM / GRU / RNN built after torch.manual_seed (its
own init); the forward is re-run here in float64 and checked against torch's:
  gates get no relevance, gate·signal products hand all to the signal;
  LSTM  R_c = R_h + R_c(next), R_g = i·g/stab(c)·R_c, R_c_prev = f·c_prev/stab(c)·R_c,
        z_g = x·W_igᵀ + h_prev·W_hgᵀ (pre-bias: strix's default rule) split on x and h_prev;
  GRU   R_h_prev = z·h_prev/stab(h)·R_h + ..., R_n = (1−z)·n/stab(h)·R_h,
        x gets x_j·W_in,kj/stab(n_pre_k)·R_n_k, hn gets r·hn/stab(n_pre)·R_n, and h_prev
        h_prev_j·W_hn,kj/stab(hn_k) of it (n_pre, hn with their biases);
layers top down, each direction its H columns of the layer output's relevance, both
directions' input relevance summed; RNN (tanh or relu) hands R_h to z, split as LSTM's z;
LSTM with proj_size: h = u·W_hrᵀ, u = o·tanh(c), R_u_j = Σ_k u_j·W_hr,kj/stab(h_k)·R_h_k, and
R_u goes on to c as R_h does without projections.
stab(z) = z + eps·sign(z), sign(0) = +1.
Arrays: x, h0, c0 (LSTM), eps, r_y (B,T,dirs·Hr), r_h_n, r_c_n (LSTM) the seeded
relevance, the outputs r_x, r_h0, r_c0 (LSTM), "param.<name>" for every parameter. Sizes B=2,
T=4, I=3, H=5 (Hr = proj_size 3 for lstm_proj, else H), eps 1e-2. This script does not test
strix and is not needed to run the tests.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
import ops_ref  # noqa: E402
from ops_ref import write_golden, randn  # noqa: E402

OUT_DIR = os.path.join("tests", "golden", "recurrent")
SEED = 3030
B, T, I, H = 2, 4, 3, 5
EPS = 1e-2
PROJ = 3


def stab(z, eps):
    return z + eps * np.where(z >= 0, 1.0, -1.0)


def sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def lin_terms(x, w, z, r, eps):
    """Per-term epsilon rule: R_j = Σ_k x_j·w[k, j]/stab(z_k)·r_k (rows of x, z, r)."""
    contrib = x[:, None, :] * w[None, :, :]          # (rows, out, in)
    return (contrib / stab(z, eps)[:, :, None] * r[:, :, None]).sum(axis=1)


def run_dir(kind, p, x, h0, c0, reverse):
    """Forward of one direction in float64: x (T, B, I_l). Returns the per-step caches."""
    wih, whh, bih, bhh, whr = p
    steps = range(T - 1, -1, -1) if reverse else range(T)
    h, c = h0, c0
    cache = {}
    ys = np.zeros((T, B, h0.shape[1]))
    for t in steps:
        gx = x[t] @ wih.T + bih
        gh = h @ whh.T + bhh
        if kind in ("rnn", "rnn_relu"):
            zpre = x[t] @ wih.T + h @ whh.T                           # pre-bias z
            hn_ = np.tanh(gx + gh) if kind == "rnn" else np.maximum(gx + gh, 0.0)
            cache[t] = dict(h_prev=h, x=x[t], z=zpre)
        elif kind in ("lstm", "lstm_proj"):
            zi, zf, zg, zo = np.split(gx + gh, 4, axis=1)
            i, f, g, o = sig(zi), sig(zf), np.tanh(zg), sig(zo)
            cn = f * c + i * g
            u = o * np.tanh(cn)
            hn_ = u @ whr.T if whr is not None else u
            zpre = (x[t] @ wih.T + h @ whh.T)[:, 2 * H:3 * H]     # pre-bias z of g
            cache[t] = dict(i=i, f=f, g=g, c_prev=c, c=cn, h_prev=h, x=x[t], z=zpre, u=u,
                            h=hn_)
            c = cn
        else:
            xr, xz, xn = np.split(gx, 3, axis=1)
            hr, hz, hnn = np.split(gh, 3, axis=1)
            r = sig(xr + hr)
            z = sig(xz + hz)
            npre = xn + r * hnn
            n = np.tanh(npre)
            hn_ = (1 - z) * n + z * h
            cache[t] = dict(r=r, z=z, n=n, npre=npre, hn=hnn, h_prev=h, h=hn_, x=x[t])
        h = hn_
        ys[t] = h
    return ys, h, c, cache


def lrp_dir(kind, p, cache, r_own, rh_T, rc_T, reverse, eps):
    """Relevance of one direction: r_own (T, B, H). Returns R_x (T, B, I_l), R_h0, R_c0."""
    wih, whh, whr = p[0], p[1], p[4]
    steps = range(T) if reverse else range(T - 1, -1, -1)
    rh, rc = rh_T, rc_T
    rx = np.zeros((T, B, wih.shape[1]))
    for t in steps:
        k = cache[t]
        if kind in ("rnn", "rnn_relu"):
            rz = r_own[t] + rh
            rx[t] = lin_terms(k["x"], wih, k["z"], rz, eps)
            rh = lin_terms(k["h_prev"], whh, k["z"], rz, eps)
        elif kind in ("lstm", "lstm_proj"):
            ru = r_own[t] + rh
            if whr is not None:
                ru = lin_terms(k["u"], whr, k["h"], ru, eps)
            rc_tot = ru + rc
            rg = k["i"] * k["g"] / stab(k["c"], eps) * rc_tot
            rc = k["f"] * k["c_prev"] / stab(k["c"], eps) * rc_tot
            rx[t] = lin_terms(k["x"], wih[2 * H:3 * H], k["z"], rg, eps)
            rh = lin_terms(k["h_prev"], whh[2 * H:3 * H], k["z"], rg, eps)
        else:
            rh_tot = r_own[t] + rh
            direct = k["z"] * k["h_prev"] / stab(k["h"], eps) * rh_tot
            rn = (1 - k["z"]) * k["n"] / stab(k["h"], eps) * rh_tot
            rx[t] = lin_terms(k["x"], wih[2 * H:3 * H], k["npre"], rn, eps)
            rterm = k["r"] * k["hn"] / stab(k["npre"], eps) * rn
            rh = direct + lin_terms(k["h_prev"], whh[2 * H:3 * H], k["hn"], rterm, eps)
    return rx, rh, rc


def case(name, kind, layers, bidirectional, seed):
    torch.manual_seed(SEED + seed)
    extra = {"rnn_relu": dict(nonlinearity="relu"), "lstm_proj": dict(proj_size=PROJ)}
    cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN, "rnn_relu": nn.RNN,
           "lstm_proj": nn.LSTM}[kind]
    m = cls(I, H, num_layers=layers, batch_first=True, bidirectional=bidirectional,
            **extra.get(kind, {}))
    lstm = kind in ("lstm", "lstm_proj")
    hr = PROJ if kind == "lstm_proj" else H
    dirs = 2 if bidirectional else 1
    x = randn(B, T, I)
    h0 = randn(layers * dirs, B, hr)
    c0 = randn(layers * dirs, B, H)
    r_y = randn(B, T, dirs * hr)
    r_hn = randn(layers * dirs, B, hr)
    r_cn = randn(layers * dirs, B, H)
    with torch.no_grad():
        y_t, _ = m(x, (h0, c0) if lstm else h0)
    P = {n: v.detach().double().numpy() for n, v in m.named_parameters()}
    X = x.double().numpy().transpose(1, 0, 2)     # time-major
    H0, C0 = h0.double().numpy(), c0.double().numpy()
    inp = X
    caches = []
    for l in range(layers):
        outs = []
        for d in range(dirs):
            s = f"_l{l}" + ("_reverse" if d else "")
            p = (P["weight_ih" + s], P["weight_hh" + s], P["bias_ih" + s], P["bias_hh" + s],
                 P.get("weight_hr" + s))
            idx = l * dirs + d
            ys, _, _, cache = run_dir(kind, p, inp, H0[idx], C0[idx], d == 1)
            outs.append(ys)
            caches.append((p, cache, inp.shape[2]))
        inp = np.concatenate(outs, axis=2)
    y = inp.transpose(1, 0, 2)
    assert np.abs(y - y_t.double().numpy()).max() < 1e-5, "float64 forward differs from torch"
    RY = r_y.double().numpy().transpose(1, 0, 2)
    RHN, RCN = r_hn.double().numpy(), r_cn.double().numpy()
    rh0 = np.zeros_like(H0)
    rc0 = np.zeros_like(C0)
    r = RY
    for l in range(layers - 1, -1, -1):
        r_in = None
        for d in range(dirs):
            idx = l * dirs + d
            p, cache, _ = caches[idx]
            rx, rh, rc = lrp_dir(kind, p, cache, r[:, :, d * hr:(d + 1) * hr], RHN[idx],
                                 RCN[idx] if lstm else 0.0, d == 1, EPS)
            r_in = rx if r_in is None else r_in + rx
            rh0[idx] = rh
            rc0[idx] = rc
        r = r_in
    arrays = [("x", x), ("h0", h0)]
    if lstm:
        arrays.append(("c0", c0))
    arrays += [("eps", EPS), ("r_y", r_y), ("r_h_n", r_hn)]
    if lstm:
        arrays.append(("r_c_n", r_cn))
    arrays += [("r_x", torch.from_numpy(r.transpose(1, 0, 2).copy())),
               ("r_h0", torch.from_numpy(rh0))]
    if lstm:
        arrays.append(("r_c0", torch.from_numpy(rc0)))
    for pname, v in m.named_parameters():
        arrays.append(("param." + pname, v.detach()))
    write_golden(name, arrays, generator="tools/ref/recurrent_lrp_ref.py", seed=SEED + seed,
                 out_dir=OUT_DIR)
    print(name, "max |r_x|", np.abs(r).max())


def main():
    ops_ref.OUT_DIR = OUT_DIR
    case("lstm_lrp_1l", "lstm", 1, False, seed=1)
    case("gru_lrp_1l", "gru", 1, False, seed=2)
    case("lstm_lrp_2l_bi", "lstm", 2, True, seed=3)
    case("gru_lrp_2l_bi", "gru", 2, True, seed=4)
    case("rnn_lrp_2l_bi", "rnn", 2, True, seed=5)
    case("rnn_relu_lrp_2l_bi", "rnn_relu", 2, True, seed=6)
    case("lstm_proj_lrp_2l_bi", "lstm_proj", 2, True, seed=7)


if __name__ == "__main__":
    main()
