#!/work/venv-lrp/bin/python
"""attnlrp_ref.py - AttnLRP goldens for tests/test_attnlrp.c (strix's GPT relevance).

Run from the repository root with the LRP reference venv (Python 3.12, torch 2.15, LXT 2.1):
    /work/venv-lrp/bin/python tools/ref/attnlrp_ref.py
It writes tests/golden/attnlrp/*.bin (five files of 19-38 KB) in the format of tests/testlib.h.

Two independent references, computed in float64 and required to agree (relative 1e-9):
  * LXT 2.1 (`lxt.explicit`, Achtibat et al. 2024): the models are built from its relevance
    functions (linear_epsilon, matmul = the bilinear "Eq. 15" rule, softmax, add2, layer_norm with
    the std detached, identity for activations, the generic epsilon_lrp for RoPE and for
    bias-out-of-the-denominator Linears), and the relevance is its autograd backward of the seed.
  * a transcription of the published rules written here by hand (no LXT): epsilon rule (Bach et
    al. 2015, Eq. 58), bilinear rule and softmax rule (Achtibat et al. 2024, Eq. 15 and Prop. 3.1),
    LayerNorm with the std held constant or passed through, the epsilon rule of RoPE's pair
    rotation, the epsilon split of residual sums and of x0 = wte[id] + wpe[pos].
LXT stabilises with z + eps for every sign; strix with stab(z) = z + eps·sign(z), sign(0) = +1.
LXT's `_stabilize` is replaced by strix's stabiliser here (the only patch), so both references
use strix's convention; at eps = 1e-6 LXT's own convention moves the GPT's relevances by up to
4e-5 relative (printed at the end), more than the tests' tolerance. `lxt.efficient` is not
imported: its package needs transformers < 4.50 (its rules target HF models).

Models (nanoGPT layout, strix's parameter names; random weights so every path carries signal):
  mha.bin / mha_rope.bin  causal self-attention (C 16, 2 heads, B 2, T 7) -> Flatten ->
                          Linear(112, 5); rope variant rotates q, k (adjacent pairs).
  gpt.bin                 GPT V 11, block 8, C 16, 2 heads, 2 layers, learned positions, GELU.
  gpt_rope.bin            the same with RoPE instead of learned positions.
  gpt_relu.bin            the same with a ReLU MLP.
Each file holds the weights ("param.<strix name>"), the input, and per rule configuration <cfg>
the input relevance "r.<cfg>" (MHA: (B,T,C); GPT: "tok.<cfg>" (T,C) token share of x0's
relevance, "pos.<cfg>" (T,C) position share, "rtok.<cfg>" / "rpos.<cfg>" (T) their sums over
d_model, "out_sum.<cfg>", "in_sum.<cfg>", "gap.<cfg>" = Σ softmax relevance lost).
Each case's seed is one where a float32 evaluation of the transcription stays within 2e-5 of the
float64 reference for every configuration (checked here): strix computes in float32, and the
bias-out epsilon rule amplifies rounding where a pre-bias z is near 0.
Configurations (eps, bias in the denominator, LayerNorm mode, seed):
  lxt       1e-6, bias in, std detached, logit seed        (LXT's AttnLRP config)
  eps       0.05, bias in, std detached, logit seed        (where each epsilon enters)
  out       1e-6, bias out, std detached, logit seed       (strix's default)
  ident     1e-6, bias in, LayerNorm passes relevance through, logit seed
  onehot    1e-6, bias in, std detached, one-hot seed with a contrast class (GPT only)
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden  # noqa: E402

import lxt.explicit.functional as lf  # noqa: E402
import lxt.explicit.rules as lr  # noqa: E402

GEN = "tools/ref/attnlrp_ref.py (venv-lrp: torch 2.15, lxt 2.1)"
OUT_DIR = os.path.join("tests", "golden", "attnlrp")
F64 = torch.float64


def stab(z, eps):
    """strix's stabiliser z + eps·sign(z), sign(0) = +1."""
    return z + eps * torch.where(z >= 0, torch.ones_like(z), -torch.ones_like(z))


def lxt_stab_strix(input, epsilon=1e-6, inplace=False):
    return stab(input, epsilon)


_LXT_STAB = lf._stabilize


def use_lxt_stabiliser(native):
    f = _LXT_STAB if native else lxt_stab_strix
    lf._stabilize = f
    lr._stabilize = f


CONFIGS = {
    "lxt": dict(eps=1e-6, bias_in=True, ln="detach", onehot=False),
    "eps": dict(eps=0.05, bias_in=True, ln="detach", onehot=False),
    "out": dict(eps=1e-6, bias_in=False, ln="detach", onehot=False),
    "ident": dict(eps=1e-6, bias_in=True, ln="identity", onehot=False),
    "onehot": dict(eps=1e-6, bias_in=True, ln="detach", onehot=True),
}


# ---- parameters ---------------------------------------------------------------------------------

def rand_params(spec, gen, wstd=0.3, bstd=0.1):
    """spec: list of (name, shape). LayerNorm weights 1 + N(0, 0.1), 1-D N(0, bstd), 2-D N(0, wstd)
    (embeddings N(0, 1))."""
    p = {}
    for name, shape in spec:
        if name.startswith("transformer.wte") or name.startswith("transformer.wpe"):
            t = torch.randn(shape, generator=gen, dtype=F64)
        elif len(shape) == 1 and (".ln_" in name or "ln_f" in name) and name.endswith("weight"):
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen, dtype=F64)
        elif len(shape) == 1:
            t = bstd * torch.randn(shape, generator=gen, dtype=F64)
        else:
            t = wstd * torch.randn(shape, generator=gen, dtype=F64)
        # round through float32: strix holds exactly these values
        p[name] = t.float().double()
    return p


def attn_spec(prefix, C):
    return [(f"{prefix}.c_attn.weight", (3 * C, C)), (f"{prefix}.c_attn.bias", (3 * C,)),
            (f"{prefix}.c_proj.weight", (C, C)), (f"{prefix}.c_proj.bias", (C,))]


def gpt_spec(cfg):
    C, V, L, d_ff = cfg["C"], cfg["V"], cfg["L"], cfg["d_ff"]
    s = [("transformer.wte.weight", (V, C))]
    if not cfg["rope"]:
        s.append(("transformer.wpe.weight", (cfg["block"], C)))
    for l in range(L):
        h = f"transformer.h.{l}"
        s += [(f"{h}.ln_1.weight", (C,)), (f"{h}.ln_1.bias", (C,))]
        s += attn_spec(f"{h}.attn", C)
        s += [(f"{h}.ln_2.weight", (C,)), (f"{h}.ln_2.bias", (C,)),
              (f"{h}.mlp.c_fc.weight", (d_ff, C)), (f"{h}.mlp.c_fc.bias", (d_ff,)),
              (f"{h}.mlp.c_proj.weight", (C, d_ff)), (f"{h}.mlp.c_proj.bias", (C,))]
    s += [("transformer.ln_f.weight", (C,)), ("transformer.ln_f.bias", (C,)),
          ("lm_head.weight", (V, C))]
    return s


def rope_tables(T, hs, base=10000.0):
    """strix's tables: angle pos/base^(2i/hs) in double, cos/sin rounded to float32."""
    i = torch.arange(hs // 2, dtype=F64)
    inv = 1.0 / torch.pow(torch.tensor(base, dtype=F64), 2.0 * i / hs)
    ang = torch.arange(T, dtype=F64)[:, None] * inv[None, :]
    return torch.cos(ang).float().double(), torch.sin(ang).float().double()


def rope_apply(x, cos, sin):
    """x (..., T, hs), adjacent pairs (2i, 2i+1): lo' = lo·c − hi·s, hi' = lo·s + hi·c."""
    lo, hi = x[..., 0::2], x[..., 1::2]
    return torch.stack((lo * cos - hi * sin, lo * sin + hi * cos), dim=-1).flatten(-2)


# ---- reference 1: LXT's explicit rules ---------------------------------------------------------

class LxtOps:
    """The model's operations as LXT relevance functions for one rule configuration."""

    def __init__(self, cfg):
        self.eps, self.bias_in, self.ln = cfg["eps"], cfg["bias_in"], cfg["ln"]

    def linear(self, x, w, b):
        if self.bias_in or b is None:
            return lf.linear_epsilon(x, w, b, self.eps)
        # bias out of the denominator: epsilon rule on x·Wᵀ, the bias added outside the rule
        return lr.epsilon_lrp(lambda t: F.linear(t, w), self.eps, x) + b

    def layer_norm(self, x, w, b, ln_eps):
        if self.ln == "identity":
            return lr.identity(lambda t: F.layer_norm(t, t.shape[-1:], w, b, ln_eps), x)
        if self.bias_in:
            return lf.layer_norm_grad_fn.apply(x, w, b, ln_eps, self.eps)

        def centred(t):
            mean = t.mean(-1, keepdim=True)
            std = ((t - mean) ** 2).mean(-1, keepdim=True).add(ln_eps).sqrt().detach()
            return (t - mean) / std * w
        return lr.epsilon_lrp(centred, self.eps, x) + b

    def add(self, a, b):
        return lf.add2(a, b, epsilon=self.eps)

    def matmul(self, a, b):
        return lf.matmul(a, b, epsilon=self.eps)

    def softmax(self, x):
        return lf.softmax(x, -1)

    def scale(self, x, s):
        return lf.mul2(x, s)  # identity for the relevance (the factor needs no gradient)

    def act(self, fn, x):
        return lr.identity(fn, x)

    def rope(self, x, cos, sin):
        return lr.epsilon_lrp(lambda t: rope_apply(t, cos, sin), self.eps, x)


def lxt_attention(ops, p, pre, x, heads, rope):
    """x (B,T,C) -> (B,T,C), strix's CausalSelfAttention."""
    B, T, C = x.shape
    qkv = ops.linear(x, p[f"{pre}.c_attn.weight"], p[f"{pre}.c_attn.bias"])
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    outs, off = [], 0
    for hs in heads:
        q = qkv[..., off:off + hs]
        k = qkv[..., C + off:C + off + hs]
        v = qkv[..., 2 * C + off:2 * C + off + hs]
        if rope:
            cos, sin = rope_tables(T, hs)
            q, k = ops.rope(q, cos, sin), ops.rope(k, cos, sin)
        s = ops.scale(ops.matmul(q, k.transpose(-1, -2)), 1.0 / math.sqrt(hs))
        s = s.masked_fill(~mask, float("-inf"))
        outs.append(ops.matmul(ops.softmax(s), v))
        off += hs
    return ops.linear(torch.cat(outs, dim=-1), p[f"{pre}.c_proj.weight"], p[f"{pre}.c_proj.bias"])


def lxt_gpt(ops, p, cfg, ids):
    """Returns (logits (T,V), tok leaf, pos leaf or None)."""
    T = ids.shape[0]
    tok = p["transformer.wte.weight"][ids].clone().requires_grad_(True)
    pos = None
    if cfg["rope"]:
        x = tok
    else:
        pos = p["transformer.wpe.weight"][:T].clone().requires_grad_(True)
        x = ops.add(tok, pos)
    x = x[None]
    act = F.relu if cfg["act"] == "relu" else F.gelu
    for l in range(cfg["L"]):
        h = f"transformer.h.{l}"
        a = ops.layer_norm(x, p[f"{h}.ln_1.weight"], p[f"{h}.ln_1.bias"], cfg["ln_eps"])
        x = ops.add(x, lxt_attention(ops, p, f"{h}.attn", a, cfg["heads"], cfg["rope"]))
        a = ops.layer_norm(x, p[f"{h}.ln_2.weight"], p[f"{h}.ln_2.bias"], cfg["ln_eps"])
        m = ops.linear(a, p[f"{h}.mlp.c_fc.weight"], p[f"{h}.mlp.c_fc.bias"])
        m = ops.linear(ops.act(act, m), p[f"{h}.mlp.c_proj.weight"], p[f"{h}.mlp.c_proj.bias"])
        x = ops.add(x, m)
    x = ops.layer_norm(x, p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], cfg["ln_eps"])
    return ops.linear(x, p["lm_head.weight"], None)[0], tok, pos


# ---- reference 2: the rules transcribed by hand ------------------------------------------------

def t_linear_fwd(x, w, b):
    z = x @ w.T
    return z, (z + b if b is not None else z)


def t_linear_rel(x, w, b, z, r, rule):
    den = z + b if (rule["bias_in"] and b is not None) else z
    return x * ((r / stab(den, rule["eps"])) @ w)


def t_layer_norm_fwd(x, w, b, ln_eps):
    mean = x.mean(-1, keepdim=True)
    std = ((x - mean) ** 2).mean(-1, keepdim=True).add(ln_eps).sqrt()
    ypre = (x - mean) / std * w
    return dict(x=x, w=w, b=b, std=std, ypre=ypre), ypre + b


def t_layer_norm_rel(c, r, rule):
    """std constant: y_i = w_i·(x_i − mean)/std + b_i is linear in x; epsilon rule on it."""
    if rule["ln"] == "identity":
        return r
    den = c["ypre"] + c["b"] if rule["bias_in"] else c["ypre"]
    s = r / stab(den, rule["eps"]) * c["w"] / c["std"]
    g = s - s.mean(-1, keepdim=True)  # Jᵀs with J = diag(w/std)·(I − 1/D)
    return c["x"] * g


def t_split(a, b, r, eps):
    den = stab(a + b, eps)
    return a / den * r, b / den * r


def t_bilinear(a, b, o, r, eps):
    """o = a @ b: each operand gets half, w = r/stab(2o)."""
    w = r / stab(2.0 * o, eps)
    return a * (w @ b.transpose(-1, -2)), b * (a.transpose(-1, -2) @ w)


def t_softmax_rel(x, y, r):
    x0 = torch.where(torch.isneginf(x), torch.zeros_like(x), x)
    return x0 * (r - y * r.sum(-1, keepdim=True))


def t_rope_rel(x, y, r, cos, sin, eps):
    lo, hi = x[..., 0::2], x[..., 1::2]
    dlo, dhi = stab(y[..., 0::2], eps), stab(y[..., 1::2], eps)
    rlo, rhi = r[..., 0::2], r[..., 1::2]
    out_lo = lo * cos / dlo * rlo + lo * sin / dhi * rhi
    out_hi = -hi * sin / dlo * rlo + hi * cos / dhi * rhi
    return torch.stack((out_lo, out_hi), dim=-1).flatten(-2)


def t_attention_fwd(p, pre, x, heads, rope):
    B, T, C = x.shape
    wa, ba = p[f"{pre}.c_attn.weight"], p[f"{pre}.c_attn.bias"]
    za, qkv = t_linear_fwd(x, wa, ba)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    hc, outs, off = [], [], 0
    for hs in heads:
        q0 = qkv[..., off:off + hs]
        k0 = qkv[..., C + off:C + off + hs]
        v = qkv[..., 2 * C + off:2 * C + off + hs]
        cos = sin = None
        q, k = q0, k0
        if rope:
            cos, sin = (t.to(x.dtype) for t in rope_tables(T, hs))
            q, k = rope_apply(q0, cos, sin), rope_apply(k0, cos, sin)
        s = q @ k.transpose(-1, -2)
        xs = (s / math.sqrt(hs)).masked_fill(~mask, float("-inf"))
        pr = torch.softmax(xs, -1)
        o = pr @ v
        hc.append(dict(q0=q0, k0=k0, q=q, k=k, v=v, s=s, xs=xs, p=pr, o=o, cos=cos, sin=sin,
                       off=off, hs=hs))
        outs.append(o)
        off += hs
    y = torch.cat(outs, -1)
    wp, bp = p[f"{pre}.c_proj.weight"], p[f"{pre}.c_proj.bias"]
    zp, out = t_linear_fwd(y, wp, bp)
    return dict(x=x, wa=wa, ba=ba, za=za, heads=hc, y=y, wp=wp, bp=bp, zp=zp, C=C), out


def t_attention_rel(c, r, rule, gaps):
    eps, C = rule["eps"], c["C"]
    ry = t_linear_rel(c["y"], c["wp"], c["bp"], c["zp"], r, rule)
    rqkv = torch.zeros_like(c["za"])
    for h in c["heads"]:
        off, hs = h["off"], h["hs"]
        rp, rv = t_bilinear(h["p"], h["v"], h["o"], ry[..., off:off + hs], eps)
        rx = t_softmax_rel(h["xs"], h["p"], rp)
        gaps.append(float(rp.sum() - rx.sum()))
        rq, rk = t_bilinear(h["q"], h["k"].transpose(-1, -2), h["s"], rx, eps)
        rk = rk.transpose(-1, -2)
        if h["cos"] is not None:
            rq = t_rope_rel(h["q0"], h["q"], rq, h["cos"], h["sin"], eps)
            rk = t_rope_rel(h["k0"], h["k"], rk, h["cos"], h["sin"], eps)
        rqkv[..., off:off + hs] = rq
        rqkv[..., C + off:C + off + hs] = rk
        rqkv[..., 2 * C + off:2 * C + off + hs] = rv
    return t_linear_rel(c["x"], c["wa"], c["ba"], c["za"], rqkv, rule), rqkv


def t_gpt(p, cfg, ids, seed_fn, rule):
    """Forward, seed, relevance. Returns logits (T,V), r_tok, r_pos (T,C) or None, gaps,
    block-input relevances."""
    T = ids.shape[0]
    tok = p["transformer.wte.weight"][ids]
    pos = None if cfg["rope"] else p["transformer.wpe.weight"][:T]
    x = (tok if pos is None else tok + pos)[None]
    act = F.relu if cfg["act"] == "relu" else F.gelu
    blocks = []
    for l in range(cfg["L"]):
        h = f"transformer.h.{l}"
        c1, a = t_layer_norm_fwd(x, p[f"{h}.ln_1.weight"], p[f"{h}.ln_1.bias"], cfg["ln_eps"])
        ca, ao = t_attention_fwd(p, f"{h}.attn", a, cfg["heads"], cfg["rope"])
        x1 = x + ao
        c2, a2 = t_layer_norm_fwd(x1, p[f"{h}.ln_2.weight"], p[f"{h}.ln_2.bias"], cfg["ln_eps"])
        w1, b1 = p[f"{h}.mlp.c_fc.weight"], p[f"{h}.mlp.c_fc.bias"]
        w2, b2 = p[f"{h}.mlp.c_proj.weight"], p[f"{h}.mlp.c_proj.bias"]
        z1, pre = t_linear_fwd(a2, w1, b1)
        hid = act(pre)
        z2, mo = t_linear_fwd(hid, w2, b2)
        blocks.append(dict(x=x, c1=c1, ca=ca, ao=ao, x1=x1, c2=c2, a2=a2, w1=w1, b1=b1, z1=z1,
                           hid=hid, w2=w2, b2=b2, z2=z2, mo=mo))
        x = x1 + mo
    cf, xf = t_layer_norm_fwd(x, p["transformer.ln_f.weight"], p["transformer.ln_f.bias"],
                              cfg["ln_eps"])
    wl = p["lm_head.weight"]
    zl, logits = t_linear_fwd(xf, wl, None)
    logits = logits[0]

    r = seed_fn(logits)[None]
    r = t_layer_norm_rel(cf, t_linear_rel(xf, wl, None, zl, r, rule), rule)
    gaps, r_blocks = [], []
    for b in reversed(blocks):
        rx1, rm = t_split(b["x1"], b["mo"], r, rule["eps"])
        rh = t_linear_rel(b["hid"], b["w2"], b["b2"], b["z2"], rm, rule)
        ra2 = t_linear_rel(b["a2"], b["w1"], b["b1"], b["z1"], rh, rule)
        rx1 = rx1 + t_layer_norm_rel(b["c2"], ra2, rule)
        rx, ra = t_split(b["x"], b["ao"], rx1, rule["eps"])
        ra1, _ = t_attention_rel(b["ca"], ra, rule, gaps)
        r = rx + t_layer_norm_rel(b["c1"], ra1, rule)
        r_blocks.insert(0, r[0])
    r = r[0]
    if pos is None:
        return logits, r, None, gaps, r_blocks
    rt, rp = t_split(tok, pos, r, rule["eps"])
    return logits, rt, rp, gaps, r_blocks


# ---- cases -------------------------------------------------------------------------------------

def seed_of(logits, target, contrast, onehot):
    """Relevance at the output (T,V): only the last position's target (and contrast) entry."""
    r = torch.zeros_like(logits)
    r[-1, target] = 1.0 if onehot else logits[-1, target]
    if contrast >= 0:
        r[-1, contrast] = -1.0 if onehot else -logits[-1, contrast]
    return r


def rel_close(a, b, tol=1e-9):
    return float((a - b).abs().max()) <= tol * max(1.0, float(b.abs().max()))


def check(label, a, b, tol=1e-9):
    err = float((a - b).abs().max() / max(1.0, float(b.abs().max())))
    status = "ok" if err <= tol else "MISMATCH"
    print(f"  {label}: max rel diff {err:.2e} {status}")
    if err > tol:
        sys.exit(f"{label}: references disagree")


def t_mha(p, x, targets, rule, rope, heads):
    """Transcription of the MHA case: returns logits, input relevance, r at qkv, seed, gaps."""
    B, T, C = x.shape
    gaps = []
    c, a = t_attention_fwd(p, "attn", x, heads, rope)
    flat = a.reshape(B, T * C)
    z, logits = t_linear_fwd(flat, p["head.weight"], p["head.bias"])
    seed = torch.zeros_like(logits)
    seed[torch.arange(B), targets] = logits[torch.arange(B), targets]
    ra = t_linear_rel(flat, p["head.weight"], p["head.bias"], z, seed, rule)
    r, rqkv = t_attention_rel(c, ra.reshape(B, T, C), rule, gaps)
    return logits, r, rqkv, seed, gaps


def float32_error(fn, p, *args):
    """Max over elements of |r32 − r64|/max(1, |r64|) of a transcription run in float32: how
    well conditioned a case is (strix computes in float32)."""
    r64 = fn(p, *args)
    torch.set_default_dtype(torch.float32)
    try:
        r32 = fn({k: v.float() for k, v in p.items()},
                 *[a.float() if torch.is_tensor(a) and a.is_floating_point() else a
                   for a in args])
    finally:
        torch.set_default_dtype(F64)
    return max(float(((a - b.double()).abs() / a.abs().clamp(min=1.0)).max())
               for a, b in zip(r64, r32) if a is not None)


def mha_case(fname, rope, seed):
    gen = torch.Generator().manual_seed(seed)
    B, T, C, heads, K = 2, 7, 16, [8, 8], 5
    p = rand_params(attn_spec("attn", C) + [("head.weight", (K, T * C)), ("head.bias", (K,))],
                    gen)
    x = torch.randn(B, T, C, generator=gen, dtype=F64).float().double()
    targets = torch.tensor([2, 4])
    arrays = [(f"param.{n}", t) for n, t in p.items()]
    arrays += [("x", x), ("targets", targets.double())]
    print(f"{fname}:")
    for name in ("lxt", "eps", "out"):
        rule = CONFIGS[name]
        ops = LxtOps(rule)
        xl = x.clone().requires_grad_(True)
        a = lxt_attention(ops, p, "attn", xl, heads, rope)
        logits = ops.linear(a.reshape(B, T * C), p["head.weight"], p["head.bias"])
        seed_t = torch.zeros_like(logits)
        seed_t[torch.arange(B), targets] = logits[torch.arange(B), targets].detach()
        logits.backward(seed_t)
        lg, r_t, rqkv, seed_r, gaps = t_mha(p, x, targets, rule, rope, heads)
        check(f"{name} LXT vs transcription", xl.grad, r_t)
        err = float32_error(lambda pp, xx: t_mha(pp, xx, targets, rule, rope, heads)[1:3], p, x)
        print(f"  {name}: float32 transcription error {err:.1e}")
        assert err < 2e-5, "badly conditioned case: pick another seed"
        arrays += [(f"r.{name}", r_t), (f"out_sum.{name}", seed_r.sum()),
                   (f"gap.{name}", sum(gaps)), (f"rqkv.{name}", rqkv)]
        if name == "lxt":
            arrays += [("logits", lg)]
    write_golden(fname.replace(".bin", ""), arrays, generator=GEN, seed=seed, out_dir=OUT_DIR)


def gpt_case(fname, cfg, seed):
    gen = torch.Generator().manual_seed(seed)
    p = rand_params(gpt_spec(cfg), gen)
    T = cfg["block"]
    ids = torch.randint(0, cfg["V"], (T,), generator=gen)
    arrays = [(f"param.{n}", t) for n, t in p.items()]
    for k in ("V", "block", "L", "C", "d_ff"):
        arrays.append((f"cfg.{k}", float(cfg[k])))
    arrays += [("cfg.heads", torch.tensor(cfg["heads"], dtype=F64)), ("ids", ids.double())]
    print(f"{fname}:")
    logits_ref = None
    for name, rule in CONFIGS.items():
        if name == "eps" and cfg["act"] == "relu":
            continue
        contrast = -1
        target = None
        # the explained token: the predicted one (and, for onehot, class 3 against it)
        ops = LxtOps(rule)
        logits, tok, pos = lxt_gpt(ops, p, cfg, ids)
        predicted = int(torch.argmax(logits[-1]))
        target = predicted
        if rule["onehot"]:
            target, contrast = 3 if predicted != 3 else 4, predicted
        seed_t = seed_of(logits.detach(), target, contrast, rule["onehot"])
        logits.backward(seed_t)
        lt_tok, lt_pos = tok.grad, (pos.grad if pos is not None else None)

        def seed_fn(lg):
            return seed_of(lg, target, contrast, rule["onehot"])
        lg, rt, rp, gaps, r_blocks = t_gpt(p, cfg, ids, seed_fn, rule)
        check(f"{name} LXT vs transcription (tokens)", lt_tok, rt)
        if rp is not None:
            check(f"{name} LXT vs transcription (positions)", lt_pos, rp)
        err = float32_error(lambda pp: t_gpt(pp, cfg, ids, seed_fn, rule)[1:3], p)
        assert err < 2e-5, f"badly conditioned case ({err:.1e}): pick another seed"
        if logits_ref is None:
            logits_ref = lg
            arrays += [("logits", lg), ("predicted", float(predicted))]
        in_sum = rt.sum() + (rp.sum() if rp is not None else 0.0)
        arrays += [(f"target.{name}", float(target)), (f"contrast.{name}", float(contrast)),
                   (f"tok.{name}", rt), (f"rtok.{name}", rt.sum(-1)),
                   (f"out_sum.{name}", seed_t.sum()), (f"in_sum.{name}", in_sum),
                   (f"gap.{name}", sum(gaps))]
        if rp is not None:
            arrays += [(f"pos.{name}", rp), (f"rpos.{name}", rp.sum(-1))]
        if name == "lxt":
            for l, rb in enumerate(r_blocks):
                arrays.append((f"rblock{l}.{name}", rb))
        print(f"  {name}: target {target} contrast {contrast} out {float(seed_t.sum()):.4f} "
              f"in {float(in_sum):.4f} softmax gap {sum(gaps):.4f} float32 error {err:.1e}")
    write_golden(fname.replace(".bin", ""), arrays, generator=GEN, seed=seed, out_dir=OUT_DIR)


def stabiliser_note():
    """LXT's own z + eps vs strix's sign convention on the GPT (lxt config): printed only."""
    cfg = GPT_BASE
    gen = torch.Generator().manual_seed(11)
    p = rand_params(gpt_spec(cfg), gen)
    ids = torch.randint(0, cfg["V"], (cfg["block"],), generator=gen)
    out = []
    for native in (False, True):
        use_lxt_stabiliser(native)
        logits, tok, _ = lxt_gpt(LxtOps(CONFIGS["lxt"]), p, cfg, ids)
        t = int(torch.argmax(logits[-1]))
        logits.backward(seed_of(logits.detach(), t, -1, False))
        out.append(tok.grad)
    use_lxt_stabiliser(False)
    d = float((out[0] - out[1]).abs().max() / out[1].abs().max())
    print(f"LXT's z+eps vs strix's z+eps·sign(z) at eps 1e-6: max rel diff {d:.2e}")


GPT_BASE = dict(V=11, block=8, L=2, C=16, heads=[8, 8], d_ff=64, act="gelu", rope=False,
                ln_eps=1e-5)


def main():
    if not os.path.isdir(os.path.dirname(OUT_DIR)):
        sys.exit("run from the repository root (tests/golden not found)")
    os.makedirs(OUT_DIR, exist_ok=True)
    torch.set_num_threads(1)
    torch.set_default_dtype(F64)
    use_lxt_stabiliser(False)
    print(f"torch {torch.__version__}")
    mha_case("mha.bin", rope=False, seed=1)
    mha_case("mha_rope.bin", rope=True, seed=13)
    # seeds picked where a float32 evaluation of every configuration stays within 2e-5 of the
    # float64 reference (bias-out epsilon and LayerNorm pass-through amplify rounding where a
    # pre-bias z is near 0: float32 errors up to 1e-2 at other seeds)
    gpt_case("gpt.bin", GPT_BASE, seed=16)
    gpt_case("gpt_rope.bin", dict(GPT_BASE, rope=True), seed=16)
    gpt_case("gpt_relu.bin", dict(GPT_BASE, act="relu"), seed=12)
    stabiliser_note()


if __name__ == "__main__":
    main()
