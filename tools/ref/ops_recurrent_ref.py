#!/usr/bin/python3
"""ops_recurrent_ref.py - writes the golden files of the recurrent-cell and state-space
primitives (include/strix/ops/recurrent.h, ops/ssm.h) for tests/ops/cases_recurrent.c.

Run from the repository root with Debian's python3 (PyTorch 1.13, NumPy):
    /usr/bin/python3 tools/ref/ops_recurrent_ref.py
It writes tests/golden/ops/rnn_*.bin and ssm_*.bin (format: tools/ref/ops_ref.py).

Inputs are float32; every expected value is computed in float64 from those float32 inputs and
cast to float32:
  - cells: LSTM and GRU forward are plain transcriptions, checked here against torch.nn.LSTMCell
    and torch.nn.GRUCell (strix's GRU follows PyTorch: h = (1 - z)·n + z·h_prev); the backward
    goldens are torch.autograd of the transcribed cell;
  - Mamba, RWKV, RetNet: a plain Python loop over time in torch (the recurrence as written in the
    header), with torch.autograd on it for every gradient (per-state gradients through
    retain_grad, per-step parameter terms from the per-step nodes);
  - LRP ops (LSTM/GRU after Arras et al. 2019, MambaLRP, the WKV detached-quotient rule, the
    token-shift and RetNet input rules) are transcriptions of the rules. The script also checks
    the identities these rules must satisfy and stops if one fails: with R_out = output and
    eps -> 0, MambaLRP and the WKV rule equal gradient×input of the forward with the detached
    factors held constant (both are linear in the relevant input then); the rules conserve; the
    RetNet recurrent and parallel forms agree; REVERSE_TIME_SUM of the per-step terms equals the
    autograd parameter gradient.
stab(z) = z + eps·(z >= 0 ? 1 : -1) (sign(0) = +1).
This script does not test strix and is not needed to run the tests.
"""
import os
import sys
import zlib

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import OUT_DIR, write_golden  # noqa: E402

F32 = torch.float32
F64 = torch.float64
N, L, D, S = 2, 5, 3, 4  # batch, length, channels, state / key size
ROWS, HIDDEN, IN = 3, 7, 4  # cell tests: (rows, hidden), input width


def seed(name):
    torch.manual_seed(zlib.crc32(name.encode()))


def stab(z, eps):
    return z + eps * torch.where(z >= 0, torch.ones_like(z), -torch.ones_like(z))


def f32(*shape, scale=1.0):
    """A float32 random tensor, returned as float64 holding exactly the float32 values."""
    return (torch.randn(*shape, dtype=F32) * scale).to(F64)


def r32(t):
    """t rounded to float32, kept as float64 (an input strix will read)."""
    return t.detach().to(F32).to(F64)


def check(name, got, want, tol):
    err = (got - want).abs().max().item()
    scale = max(1.0, want.abs().max().item())
    assert err <= tol * scale, f"{name}: identity broken, max error {err:.3g}"
    print(f"  ok {name}: max error {err:.2e}")


def grads(loss, leaves):
    return torch.autograd.grad(loss, leaves)


def reverse_time_sum(terms):
    """(n, l, C) -> (C): t descending, then b ascending (the order is immaterial in float64)."""
    return terms.sum(dim=(0, 1))


# ---- cells ---------------------------------------------------------------------------------------

def rnn_cells():
    """RNN backward, LSTM forward/backward/LRP, GRU forward/backward/LRP and gru_lrp_hprev on one
    (ROWS, HIDDEN) step whose gates come from torch.nn.LSTMCell / GRUCell weights."""
    seed("rnn_cells")
    eps = 0.01
    x = f32(ROWS, IN)
    h_prev = f32(ROWS, HIDDEN, scale=0.8)
    c_prev = f32(ROWS, HIDDEN)
    arrays = [("eps", eps)]

    # Elman RNN: h = tanh(z); dz = (g + dh_next)(1 - h²) by autograd.
    z = f32(ROWS, HIDDEN).requires_grad_(True)
    h = torch.tanh(z)
    g, dh_next = f32(ROWS, HIDDEN), f32(ROWS, HIDDEN)
    (dz,) = grads((h * (g + dh_next)).sum(), [z])
    arrays += [("rnn_g", g), ("rnn_dh_next", dh_next), ("rnn_h", r32(h)), ("rnn_dz", dz)]

    # LSTM: gate pre-activations from an LSTMCell (i, f, g, o chunks).
    cell = torch.nn.LSTMCell(IN, HIDDEN).to(F64)
    with torch.no_grad():
        pre = x @ cell.weight_ih.T + cell.bias_ih + h_prev @ cell.weight_hh.T + cell.bias_hh
    pre = r32(pre)
    zi, zf, zg, zo = [p.clone().requires_grad_(True) for p in pre.chunk(4, dim=1)]
    gi, gf, gg, go = torch.sigmoid(zi), torch.sigmoid(zf), torch.tanh(zg), torch.sigmoid(zo)
    gates = [r32(t) for t in (gi, gf, gg, go)]
    c = gates[1] * c_prev + gates[0] * gates[2]
    tc = torch.tanh(c)
    h = gates[3] * tc
    with torch.no_grad():
        h_ref, c_ref = cell(x, (h_prev, c_prev))
    check("LSTM forward vs torch.nn.LSTMCell (h)", h, h_ref, 1e-6)
    check("LSTM forward vs torch.nn.LSTMCell (c)", c, c_ref, 1e-6)
    arrays += [("lstm_i", gates[0]), ("lstm_f", gates[1]), ("lstm_g", gates[2]),
               ("lstm_o", gates[3]), ("lstm_c_prev", c_prev), ("lstm_c", c), ("lstm_tanh_c", tc),
               ("lstm_h", h)]
    # backward: L = Σ h·(g_h + dh_next) + Σ c·dc_next over the pre-activations and c_prev
    cp = c_prev.clone().requires_grad_(True)
    c_t = gf * cp + gi * gg
    h_t = go * torch.tanh(c_t)
    g_h, dh_n, dc_n = f32(ROWS, HIDDEN), f32(ROWS, HIDDEN), f32(ROWS, HIDDEN)
    loss = (h_t * (g_h + dh_n)).sum() + (c_t * dc_n).sum()
    dzi, dzf, dzg, dzo, dcp = grads(loss, [zi, zf, zg, zo, cp])
    arrays += [("lstm_g_h", g_h), ("lstm_dh_next", dh_n), ("lstm_dc_next", dc_n),
               ("lstm_dz_i", dzi), ("lstm_dz_f", dzf), ("lstm_dz_g", dzg), ("lstm_dz_o", dzo),
               ("lstm_dc_prev", dcp)]
    # LRP (Arras et al. 2019): all of R_h goes to c; c = f·c_prev + i·g splits by the eps rule.
    c32 = r32(c)
    r, rh_next, rc_next = f32(ROWS, HIDDEN), f32(ROWS, HIDDEN), f32(ROWS, HIDDEN)
    rc = r + rh_next + rc_next
    r_g = gates[0] * gates[2] / stab(c32, eps) * rc
    r_cp = gates[1] * c_prev / stab(c32, eps) * rc
    check("LSTM LRP conserves R_c up to eps", r_g + r_cp, rc * c / stab(c32, eps), 1e-12)
    arrays += [("lstm_r", r), ("lstm_rh_next", rh_next), ("lstm_rc_next", rc_next),
               ("lstm_r_g", r_g), ("lstm_r_c_prev", r_cp)]

    # GRU: gates from a GRUCell (r, z, n chunks).
    gru = torch.nn.GRUCell(IN, HIDDEN).to(F64)
    with torch.no_grad():
        wi = gru.weight_ih.chunk(3, 0)
        wh = gru.weight_hh.chunk(3, 0)
        bi = gru.bias_ih.chunk(3)
        bh = gru.bias_hh.chunk(3)
        zr_pre = r32(x @ wi[0].T + bi[0] + h_prev @ wh[0].T + bh[0])
        zz_pre = r32(x @ wi[1].T + bi[1] + h_prev @ wh[1].T + bh[1])
        n_x = r32(x @ wi[2].T + bi[2])
        w_hn = r32(wh[2].T)  # (in, out) = (HIDDEN, HIDDEN)
        b_hn = r32(bh[2])
        hn = r32(h_prev @ w_hn + b_hn)
    zr_pre.requires_grad_(True)
    zz_pre.requires_grad_(True)
    rg, zg_ = r32(torch.sigmoid(zr_pre)), r32(torch.sigmoid(zz_pre))
    n_pre = n_x + rg * hn
    n = torch.tanh(n_pre)
    h_new = (1 - zg_) * n + zg_ * h_prev
    with torch.no_grad():
        h_ref = gru(x, h_prev)
    check("GRU forward vs torch.nn.GRUCell", h_new, h_ref, 1e-6)
    arrays += [("gru_z", zg_), ("gru_r", rg), ("gru_n_x", n_x), ("gru_hn", hn),
               ("gru_h_prev", h_prev), ("gru_n_pre", n_pre), ("gru_n", n), ("gru_h", h_new)]
    # backward over the pre-activations, n_x (= n_pre's gradient), hn and h_prev (direct path)
    nx_l = n_x.clone().requires_grad_(True)
    hn_l = hn.clone().requires_grad_(True)
    hp_l = h_prev.clone().requires_grad_(True)
    r_t, z_t = torch.sigmoid(zr_pre), torch.sigmoid(zz_pre)
    n_t = torch.tanh(nx_l + r_t * hn_l)
    h_t = (1 - z_t) * n_t + z_t * hp_l
    g_h, dh_n = f32(ROWS, HIDDEN), f32(ROWS, HIDDEN)
    dzr, dzz, dnx, dhn, dhp = grads((h_t * (g_h + dh_n)).sum(), [zr_pre, zz_pre, nx_l, hn_l, hp_l])
    arrays += [("gru_g_h", g_h), ("gru_dh_next", dh_n), ("gru_dh_prev", dhp), ("gru_dz_pre", dzz),
               ("gru_dn_pre", dnx), ("gru_dr_pre", dzr), ("gru_dhn", dhn)]
    # LRP: z, r are gates; h = (1-z)·n + z·h_prev and n_pre = n_x + r·hn split by the eps rule.
    h32, npre32, n32 = r32(h_new), r32(n_pre), r32(n)
    r, rh_next = f32(ROWS, HIDDEN), f32(ROWS, HIDDEN)
    rh = r + rh_next
    direct = zg_ * h_prev / stab(h32, eps) * rh
    r_n = (1 - zg_) * n32 / stab(h32, eps) * rh
    r_tb = rg * hn / stab(npre32, eps) * r_n
    arrays += [("gru_lrp_r", r), ("gru_rh_next", rh_next), ("gru_h32", h32),
               ("gru_npre32", npre32), ("gru_n32", n32), ("gru_r_direct", direct),
               ("gru_r_n", r_n), ("gru_r_tb", r_tb)]
    # gru_lrp_hprev: r_hprev[r][kk] = direct + Σ_k h_prev[kk]·W_hn[kk][k]/stab(hn[k])·r_tb[k]
    d32, rtb32 = r32(direct), r32(r_tb)
    r_hprev = torch.zeros(ROWS, HIDDEN, dtype=F64)
    for row in range(ROWS):
        for kk in range(HIDDEN):
            acc = d32[row, kk]
            for k in range(HIDDEN):
                acc = acc + h_prev[row, kk] * w_hn[kk, k] / stab(hn[row, k], eps) * rtb32[row, k]
            r_hprev[row, kk] = acc
    # identity: the h_prev shares sum to Σ_k r_tb[k]·(h_prev·W_hn)[k] / stab(hn[k])
    want = d32.sum(1) + (rtb32 * (h_prev @ w_hn) / stab(hn, eps)).sum(1)
    check("gru_lrp_hprev row sums", r_hprev.sum(1), want, 1e-12)
    arrays += [("gru_w_hn", w_hn), ("gru_d32", d32), ("gru_rtb32", rtb32),
               ("gru_r_hprev", r_hprev)]
    return arrays


# ---- Mamba ---------------------------------------------------------------------------------------

def mamba_scan(x, z, B, C, A, Dv, detach=False):
    """The selective scan of the header; returns delta, abar, bbar, the state list, y."""
    n, l, d = x.shape
    s = A.shape[1]
    delta = F.softplus(z)  # threshold 20: z itself above
    h = torch.zeros(n, d, s, dtype=F64)
    states, abars, bbars, ys = [h], [], [], []
    for t in range(l):
        dt = delta[:, t, :, None]
        abar = torch.exp(dt * A)
        bbar = dt * B[:, t, None, :]
        if detach:
            abar, bbar = abar.detach(), bbar.detach()
        h = abar * h + bbar * x[:, t, :, None]
        h.retain_grad()
        states.append(h)
        abars.append(abar)
        bbars.append(bbar)
        ct = C[:, t, None, :].detach() if detach else C[:, t, None, :]
        ys.append((Dv.detach() if detach else Dv) * x[:, t] + (ct * h).sum(-1))
    return delta, torch.stack(abars, 1), torch.stack(bbars, 1), states, torch.stack(ys, 1)


def mamba_lrp(x, y, ry, states, abar, bbar, C, Dv, eps):
    """MambaLRP transcription: t descending; R_h = readout share + carry from t+1."""
    n, l, d = x.shape
    rx = torch.zeros(n, l, d, dtype=F64)
    rh = torch.zeros(n, l, d, C.shape[2], dtype=F64)
    carry = torch.zeros(n, d, C.shape[2], dtype=F64)
    for t in reversed(range(l)):
        sy = stab(y[:, t], eps)
        ht, hp = states[:, t + 1], states[:, t]
        sh = stab(ht, eps)
        rh[:, t] = C[:, t, None, :] * ht / sy[..., None] * ry[:, t, :, None] + carry
        rx[:, t] = Dv * x[:, t] / sy * ry[:, t] + (bbar[:, t] * x[:, t, :, None] / sh
                                                   * rh[:, t]).sum(-1)
        carry = abar[:, t] * hp / sh * rh[:, t]
    return rx, rh


def ssm_mamba():
    seed("ssm_mamba")
    eps = 0.01
    x = f32(N, L, D)
    z = f32(N, L, D)
    z[1, 2, 1] = 25.0  # softplus's linear branch: delta = z exactly
    B, C = f32(N, L, S), f32(N, L, S)
    A = r32(-torch.exp(f32(D, S, scale=0.5)))
    Dv = f32(D)
    leaves = [t.clone().requires_grad_(True) for t in (x, z, B, C, A, Dv)]
    delta, abar, bbar, states, y = mamba_scan(*leaves)
    gy = f32(N, L, D)
    (y * gy).sum().backward()
    dx, dz, dB, dC, dA, dD = [t.grad for t in leaves]
    dh = torch.stack([s.grad for s in states[1:]], 1)  # (n, l, d, s)
    st = torch.stack([s.detach() for s in states], 1)  # (n, l+1, d, s)
    a_terms = dh * st[:, :-1] * abar.detach() * delta.detach()[..., None]
    check("Mamba A: REVERSE_TIME_SUM(A_terms) = autograd dA",
          reverse_time_sum(a_terms.reshape(N, L, D * S)), dA.reshape(-1), 1e-12)
    arrays = [("eps", eps), ("x", x), ("z", z), ("B", B), ("C", C), ("A", A), ("D", Dv),
              ("delta", delta), ("abar", abar), ("bbar", bbar), ("states", st), ("y", y),
              ("gy", gy), ("dx", dx), ("dz", dz), ("dh", dh), ("a_terms", a_terms), ("dA", dA),
              ("dB", dB), ("dC", dC)]
    # LRP from the float32 forward values strix reads, with R_y = y (the output-value seed).
    y32, st32, ab32, bb32 = r32(y), r32(st), r32(abar), r32(bbar)
    rx, rh = mamba_lrp(x, y32, y32, st32, ab32, bb32, C, Dv, eps)
    arrays += [("r_x", rx), ("r_h", rh)]
    # identities: conservation up to eps (h_0 = 0), and gradient×input at eps -> 0
    rx0, _ = mamba_lrp(x, y.detach(), y.detach(), st, abar.detach(), bbar.detach(), C, Dv, 1e-30)
    check("MambaLRP conserves (eps -> 0)", rx0.sum(), y.detach().sum(), 1e-12)
    xl = x.clone().requires_grad_(True)
    *_, y_lin = mamba_scan(xl, z, B, C, A, Dv, detach=True)
    (g_lin,) = grads(y_lin.sum(), [xl])
    check("MambaLRP = gradient×input (eps -> 0)", rx0, x * g_lin, 1e-10)
    return arrays


# ---- RWKV ----------------------------------------------------------------------------------------

def shift(x):
    return torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], 1)


def wkv_scan(zr, k, v, u, w, detach=False):
    """The WKV recurrence of the header, with per-step nodes kept for per-step gradients."""
    n, l, d = k.shape
    a = torch.zeros(n, d, dtype=F64)
    b = torch.zeros(n, d, dtype=F64)
    out = {key: [] for key in ("r", "e", "den", "wkv", "kk", "gated", "decay")}
    a_st, b_st = [a], [b]
    for t in range(l):
        r = torch.sigmoid(zr[:, t])
        e = torch.exp(u + k[:, t])
        kk = torch.exp(k[:, t])
        decay = torch.exp(-w.expand(n, d))  # a node of its own per step
        if not detach:
            e.retain_grad()
            decay.retain_grad()
        num = a + e * v[:, t]
        den = b + e
        if detach:
            e, kk, den, decay = e.detach(), kk.detach(), den.detach(), decay.detach()
        wkv = num / den
        a = decay * a + kk * v[:, t]
        b = decay * b + kk
        if not detach:
            a.retain_grad()
            b.retain_grad()
        a_st.append(a)
        b_st.append(b)
        for key, val in (("r", r), ("e", e), ("den", den), ("wkv", wkv), ("kk", kk),
                         ("gated", r * wkv), ("decay", decay)):
            out[key].append(val)
    return out, a_st, b_st


def wkv_lrp(rw, a_st, den, e, v, wkv, kk, w, eps):
    n, l, d = v.shape
    rv = torch.zeros(n, l, d, dtype=F64)
    ra = torch.zeros(n, d, dtype=F64)
    decay = torch.exp(-w)
    for t in reversed(range(l)):
        ap, at = a_st[:, t], a_st[:, t + 1]
        sw, sa = stab(wkv[:, t], eps), stab(at, eps)
        rv[:, t] = e[:, t] * v[:, t] / den[:, t] / sw * rw[:, t] + kk[:, t] * v[:, t] / sa * ra
        ra = ap / den[:, t] / sw * rw[:, t] + decay * ap / sa * ra
    return rv


def ssm_rwkv():
    seed("ssm_rwkv")
    eps = 0.01
    x = f32(N, L, D)
    mus = [torch.rand(D, dtype=F32).to(F64) for _ in range(3)]
    # token shift and its backward
    xl = x.clone().requires_grad_(True)
    mls = [m.clone().requires_grad_(True) for m in mus]
    mixes = [m * xl + (1 - m) * shift(xl) for m in mls]
    gms = [f32(N, L, D) for _ in range(3)]
    loss = sum((mix * gm).sum() for mix, gm in zip(mixes, gms))
    dx, dmr, dmk, dmv = grads(loss, [xl] + mls)
    diff = x - shift(x)
    mu_terms = [gm * diff for gm in gms]
    for name, terms, want in zip(("r", "k", "v"), mu_terms, (dmr, dmk, dmv)):
        check(f"RWKV mu_{name}: REVERSE_TIME_SUM(terms) = autograd", reverse_time_sum(terms),
              want, 1e-12)
    arrays = [("eps", eps), ("x", x), ("mu_r", mus[0]), ("mu_k", mus[1]), ("mu_v", mus[2]),
              ("xr", mixes[0]), ("xk", mixes[1]), ("xv", mixes[2]), ("g_xr", gms[0]),
              ("g_xk", gms[1]), ("g_xv", gms[2]), ("shift_dx", dx), ("mu_r_terms", mu_terms[0]),
              ("mu_k_terms", mu_terms[1]), ("mu_v_terms", mu_terms[2])]
    # token-shift LRP of the v mix
    m = r32(mixes[2])
    r_m = f32(N, L, D)
    mu = mus[2]
    r_x = mu * x / stab(m, eps) * r_m
    r_x[:, :-1] += (1 - mu) * x[:, :-1] / stab(m[:, 1:], eps) * r_m[:, 1:]
    m64 = mixes[2].detach()
    check("token-shift LRP conserves (eps -> 0)",
          (mu * x / m64 * r_m + torch.cat([(1 - mu) * x[:, :-1] / m64[:, 1:] * r_m[:, 1:],
                                           torch.zeros(N, 1, D, dtype=F64)], 1)).sum(),
          r_m.sum(), 1e-9)
    arrays += [("shift_r_m", r_m), ("shift_r_x", r_x)]

    # WKV forward / backward
    zr, k, v = f32(N, L, D), f32(N, L, D, scale=0.5), f32(N, L, D)
    u, w = f32(D, scale=0.5), f32(D, scale=0.5)
    leaves = [t.clone().requires_grad_(True) for t in (zr, k, v, u, w)]
    out, a_st, b_st = wkv_scan(*leaves)
    seq = {key: torch.stack(val, 1) for key, val in out.items() if key != "decay"}
    g = f32(N, L, D)
    (seq["gated"] * g).sum().backward()
    dzr, dk, dv, du, dw = [t.grad for t in leaves]
    u_terms = torch.stack([e.grad * e for e in out["e"]], 1)
    # the last step's decay only feeds the unused final state: no gradient (None) there
    w_terms = torch.stack([(dc.grad if dc.grad is not None else torch.zeros_like(dc)) * -dc
                           for dc in out["decay"]], 1).detach()
    check("WKV u: REVERSE_TIME_SUM(u_terms) = autograd", reverse_time_sum(u_terms), du, 1e-12)
    check("WKV w: REVERSE_TIME_SUM(w_terms) = autograd", reverse_time_sum(w_terms), dw, 1e-12)
    a_all = torch.stack([t.detach() for t in a_st], 1)
    b_all = torch.stack([t.detach() for t in b_st], 1)
    arrays += [("zr", zr), ("k", k), ("v", v), ("u", u), ("w", w)]
    arrays += [(key, val.detach()) for key, val in seq.items()]
    arrays += [("a_states", a_all), ("b_states", b_all), ("g", g), ("dzr", dzr), ("dk", dk),
               ("dv", dv), ("u_terms", u_terms), ("w_terms", w_terms), ("du", du), ("dw", dw)]
    # WKV LRP (detached quotient) from the float32 values strix reads, R_wkv = r·wkv
    rw = r32(seq["gated"])
    rv = wkv_lrp(rw, r32(a_all), r32(seq["den"]), r32(seq["e"]), v, r32(seq["wkv"]),
                 r32(seq["kk"]), w, eps)
    arrays += [("r_wkv", rw), ("r_v", rv)]
    wkv64 = seq["wkv"].detach()
    rv0 = wkv_lrp(wkv64, a_all, seq["den"].detach(), seq["e"].detach(), v, wkv64,
                  seq["kk"].detach(), w, 1e-30)
    check("WKV LRP conserves (eps -> 0)", rv0.sum(), wkv64.sum(), 1e-12)
    vl = v.clone().requires_grad_(True)
    out_d, _, _ = wkv_scan(zr, k, vl, u, w, detach=True)
    (g_lin,) = grads(torch.stack(out_d["wkv"], 1).sum(), [vl])
    check("WKV LRP = gradient×input (eps -> 0)", rv0, v * g_lin, 1e-10)
    return arrays


# ---- RetNet --------------------------------------------------------------------------------------

def ssm_retnet():
    seed("ssm_retnet")
    eps, gamma = 0.01, 0.9
    x = f32(N, L, D)
    wq, wk, wv = f32(D, S, scale=0.6), f32(D, S, scale=0.6), f32(D, D, scale=0.6)
    q, k, v = r32(x @ wq), r32(x @ wk), r32(x @ wv)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    ql, kl, vl = leaves
    st = torch.zeros(N, S, D, dtype=F64)
    states, ys = [st], []
    for t in range(L):
        st = gamma * st + kl[:, t, :, None] * vl[:, t, None, :]
        st.retain_grad()
        states.append(st)
        ys.append(torch.einsum("ni,nij->nj", ql[:, t], st))
    y = torch.stack(ys, 1)
    gy = f32(N, L, D)
    (y * gy).sum().backward()
    dq, dk, dv = [t.grad for t in leaves]
    ds = torch.stack([s.grad for s in states[1:]], 1)  # (n, l, s, d)
    st_all = torch.stack([s.detach() for s in states], 1)
    # parallel form: QK, G = gamma^(t-u)·QK (u <= t), Y = G·V
    qk = torch.tril(q @ k.transpose(1, 2))
    tt = torch.arange(L)
    powers = (tt[:, None] - tt[None, :]).clamp(min=0).to(F64)
    g_par = qk * torch.tril(gamma ** powers)
    y_par = g_par @ v
    check("RetNet recurrent = parallel form", y_par, y.detach(), 1e-12)
    arrays = [("eps", eps), ("gamma", gamma), ("q", q), ("k", k), ("v", v),
              ("states", st_all), ("y", y), ("gy", gy), ("dS", ds), ("dq", dq), ("dk", dk),
              ("dv", dv), ("qk", qk), ("g", g_par)]
    # input LRP of the three projections
    rq, rk, rv = f32(N, L, S), f32(N, L, S), f32(N, L, D)
    r_x = torch.zeros(N, L, D, dtype=F64)
    for wmat, proj, rel in ((wq, q, rq), (wk, k, rk), (wv, v, rv)):
        r_x += torch.einsum("nte,ei,nti->nte", x, wmat, rel / stab(proj, eps))
    arrays += [("x", x), ("w_q", wq), ("w_k", wk), ("w_v", wv), ("r_q", rq), ("r_k", rk),
               ("r_v", rv), ("r_x", r_x)]
    qx, kx, vx = x @ wq, x @ wk, x @ wv  # float64 projections: conservation at eps -> 0
    r0 = sum(torch.einsum("nte,ei,nti->nte", x, wm, rel / p)
             for wm, p, rel in ((wq, qx, rq), (wk, kx, rk), (wv, vx, rv)))
    check("RetNet input LRP conserves (eps -> 0)", r0.sum(), rq.sum() + rk.sum() + rv.sum(),
          1e-9)
    # stabilised divide, with exact zeros (sign(0) = +1), -0.0 and negatives in the denominator
    r = f32(N, L, D)
    z = f32(N, L, D)
    z[0, 0, :] = torch.tensor([0.0, -0.0, -1e-3], dtype=F64)
    z = r32(z)
    arrays += [("div_r", r), ("div_z", z), ("div_out", r / stab(z, eps))]
    return arrays


CASES = [rnn_cells, ssm_mamba, ssm_rwkv, ssm_retnet]


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT_DIR, exist_ok=True)
    total = 0
    for case in CASES:
        print(case.__name__)
        size = write_golden(case.__name__, case(), generator="tools/ref/ops_recurrent_ref.py",
                            seed=f"crc32({case.__name__})")
        total += size
        print(f"{case.__name__:22s} {size:8d} bytes")
    print(f"total {total} bytes in {OUT_DIR} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
