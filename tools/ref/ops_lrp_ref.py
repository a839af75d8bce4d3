#!/usr/bin/python3
"""ops_lrp_ref.py - writes the golden files of the LRP and fuzzy-logic primitives
(include/strix/ops/lrp.h, include/strix/ops/logic.h) for tests/ops/cases_lrp.c.

Run from the repository root with Debian's python3 (PyTorch 1.13, NumPy):
    /usr/bin/python3 tools/ref/ops_lrp_ref.py
It writes tests/golden/ops/lrp_*.bin and logic_*.bin (format: tools/ref/ops_ref.py).

PyTorch has no single op for these rules, so each expected value is a straightforward float64
transcription of the formula in the header (the per-term sums of
the spec, not strix's gradient×input association), cast to float32. The script also checks the
known identities and stops if one fails:
  - lrp_linear with zero bias and eps -> 0 conserves relevance, and equals the gradient×input form
    x ⊙ (Wᵀ (r/stab(z))) computed with torch.autograd;
  - lrp_conv folded with F.fold equals x * d(z · (r/stab(z)).detach())/dx with F.conv2d;
  - lrp_avg_pool equals the same autograd form with F.avg_pool2d;
  - the bilinear matmul halves conserve (Σr_a + Σr_b = Σr_o up to the eps terms);
  - the logic backward equals autograd of the forward (away from kinks and ties), for the
    implications autograd of LTNtorch 1.0's formulas (fuzzy_ops ImpliesGodel, ImpliesGoguen
    with stable=False, ImpliesLuk);
  - the Łukasiewicz implication's LRP conserves where linear (r·(b−a)/stab(b−a));
  - the aggregator backward equals autograd of the forward.
stab(z) = z + eps·(z >= 0 ? 1 : -1) everywhere (sign(0) = +1).
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


def seed(name):
    torch.manual_seed(zlib.crc32(name.encode()))


def stab(z, eps):
    """z + eps·sign(z), sign(0) = +1, in the dtype of z."""
    return z + eps * torch.where(z >= 0, torch.ones_like(z), -torch.ones_like(z))


def d(t):
    return t.to(F64)


def check(name, got, want, tol):
    err = (d(got) - d(want)).abs().max().item()
    scale = max(1.0, d(want).abs().max().item())
    assert err <= tol * scale, f"{name}: identity broken, max error {err:.3g}"
    print(f"  ok {name}: max error {err:.2e}")


def randn(*shape, scale=1.0):
    return torch.randn(*shape, dtype=F32) * scale


def uniform(*shape, lo=0.0, hi=1.0):
    return torch.rand(*shape, dtype=F32) * (hi - lo) + lo


# ---- affine rules ------------------------------------------------------------------------------

def linear_ref(x, w, z, r, eps):
    """r_in[n,i] = Σ_j x[n,i]·W[j,i]/stab(z[n,j])·r[n,j] in float64 (W is (out, in))."""
    x, w, z, r = d(x), d(w), d(z), d(r)
    terms = x[:, None, :] * w[None, :, :] / stab(z, eps)[:, :, None] * r[:, :, None]
    return terms.sum(dim=1)


def lrp_linear():
    rows, fin, fout, eps = 7, 300, 23, 0.05  # in > 256: two spans on the CPU
    x = randn(rows, fin)
    w = randn(fout, fin, scale=0.1)
    z = x @ w.T
    r = randn(rows, fout)
    r_in = linear_ref(x, w, z, r, eps)
    # gradient x input with autograd: x * d(z · s.detach())/dx, s = r/stab(z)
    xg = d(x).requires_grad_(True)
    zg = xg @ d(w).T
    (zg * (d(r) / stab(d(z), eps))).sum().backward()  # s from the given z, a constant
    check("lrp_linear = x * grad", xg * xg.grad, r_in, 1e-9)
    # conservation with zero bias and eps -> 0
    tiny = linear_ref(x, w, d(x) @ d(w).T, r, 1e-12)  # z exactly x·Wᵀ, no bias
    check("lrp_linear conserves (eps -> 0)", tiny.sum(dim=1), d(r).sum(dim=1), 1e-6)
    return [("x", x), ("w", w), ("z", z), ("r", r), ("eps", eps), ("r_in", r_in)]


def conv_case(n, c, h, w, oc, kh, kw, sh, sw, ph, pw, eps):
    x = randn(n, c, h, w)
    kernel = randn(oc, c, kh, kw, scale=0.3)
    col = F.unfold(x, (kh, kw), padding=(ph, pw), stride=(sh, sw))  # (n, P, Q)
    z = F.conv2d(x, kernel, stride=(sh, sw), padding=(ph, pw))
    oh, ow = z.shape[2], z.shape[3]
    z = z.reshape(n, oc, oh * ow)
    k2 = kernel.reshape(oc, -1)
    check("conv z = K·col", k2 @ col, z, 1e-5)
    r = randn(n, oc, oh * ow)
    # r_col[n,p,q] = Σ_oc col[n,p,q]·K[oc,p]/stab(z[n,oc,q])·r[n,oc,q]
    terms = d(col)[:, None, :, :] * d(k2)[None, :, :, None] \
        / stab(d(z), eps)[:, :, None, :] * d(r)[:, :, None, :]
    r_col = terms.sum(dim=1)
    # folded back, it equals x * d(z · s.detach())/dx computed with F.conv2d
    xg = d(x).requires_grad_(True)
    zg = F.conv2d(xg, d(kernel), stride=(sh, sw), padding=(ph, pw)).reshape(n, oc, -1)
    (zg * (d(r) / stab(d(z), eps))).sum().backward()  # s from the given z, a constant
    r_in = xg.detach() * xg.grad
    folded = F.fold(r_col, (h, w), (kh, kw), padding=(ph, pw), stride=(sh, sw))
    check("lrp_conv + fold = x * grad", folded, r_in, 1e-8)
    geom = torch.tensor([kh, kw, sh, sw, ph, pw], dtype=F32)
    shape = torch.tensor([n, c, h, w, oc], dtype=F32)
    return [("x", x), ("col", col), ("kernel", k2), ("z", z), ("r", r), ("eps", eps),
            ("geom", geom), ("shape", shape), ("r_col", r_col), ("r_in", r_in)]


def lrp_conv():
    return conv_case(2, 3, 7, 6, 4, 3, 2, 2, 1, 1, 1, 0.05)


def lrp_conv_wide():
    """40 output channels and 72 columns: more than one channel block and column block."""
    return conv_case(1, 2, 10, 9, 40, 2, 2, 1, 1, 0, 0, 0.05)


def pool_case(planes, h, w, kh, kw, sh, sw, ph, pw, eps):
    x = randn(1, planes, h, w)
    z = F.avg_pool2d(d(x), (kh, kw), (sh, sw), (ph, pw), count_include_pad=True)
    r = randn(*z.shape)
    # transcription: every pixel of window o gets x/(kh·kw)/stab(z_o)·r_o
    oh, ow = z.shape[2], z.shape[3]
    r_in = torch.zeros(1, planes, h, w, dtype=F64)
    xd = d(x)
    for oy in range(oh):
        for ox in range(ow):
            for i in range(kh):
                for j in range(kw):
                    yy, xx = oy * sh - ph + i, ox * sw - pw + j
                    if 0 <= yy < h and 0 <= xx < w:
                        r_in[0, :, yy, xx] += xd[0, :, yy, xx] / (kh * kw) \
                            / stab(z[0, :, oy, ox], eps) * d(r)[0, :, oy, ox]
    xg = d(x).requires_grad_(True)
    zg = F.avg_pool2d(xg, (kh, kw), (sh, sw), (ph, pw), count_include_pad=True)
    (zg * (d(r) / stab(zg, eps)).detach()).sum().backward()
    check("lrp_avg_pool = x * grad", xg.detach() * xg.grad, r_in, 1e-10)
    base = randn(1, planes, h, w)  # r_in is accumulated (+=) onto this
    geom = torch.tensor([kh, kw, sh, sw, ph, pw], dtype=F32)
    return [("x", x.reshape(planes, h, w)), ("r", r.reshape(planes, oh, ow)), ("eps", eps),
            ("geom", geom), ("base", base.reshape(planes, h, w)),
            ("r_in", (d(base) + r_in).reshape(planes, h, w))]


def lrp_avg_pool():
    return pool_case(5, 7, 6, 3, 3, 2, 2, 1, 1, 0.05)


def lrp_avg_pool_overlap():
    return pool_case(3, 5, 8, 2, 3, 1, 2, 0, 1, 0.05)


# ---- bilinear rules ----------------------------------------------------------------------------

def bilinear_matmul_case(slices, m, p, q, eps):
    a = randn(slices, m, p)
    b = randn(slices, p, q)
    o = a @ b
    r_o = randn(slices, m, q)
    w = d(r_o) / (2.0 * d(o) + eps * torch.where(d(o) >= 0, 1.0, -1.0).to(F64))
    terms = d(a)[:, :, :, None] * d(b)[:, None, :, :] * w[:, :, None, :]  # (s, i, j, k)
    r_a = terms.sum(dim=3)
    r_b = terms.sum(dim=1)
    tiny_w = d(r_o) / stab(2.0 * d(o), 1e-12)
    tiny = d(a)[:, :, :, None] * d(b)[:, None, :, :] * tiny_w[:, :, None, :]
    check("bilinear halves conserve (eps -> 0)", 2.0 * tiny.sum(), d(r_o).sum(), 1e-6)
    return [("a", a), ("b", b), ("bt", b.transpose(1, 2).contiguous()), ("o", o), ("r_o", r_o),
            ("eps", eps), ("r_a", r_a), ("r_b", r_b),
            ("r_bt", r_b.transpose(1, 2).contiguous())]


def lrp_bilinear_matmul():
    return bilinear_matmul_case(3, 7, 5, 9, 0.05)


def lrp_bilinear_matmul_wide():
    """q = 70: two column blocks on the CPU."""
    return bilinear_matmul_case(2, 5, 3, 70, 0.05)


def lrp_bilinear_elementwise():
    n, eps = 517, 0.05
    a, b, r = randn(n), randn(n), randn(n)
    a[0] = 0.0  # c = 0: stab(0) = +eps, share 0
    a[1], b[1] = -0.5, 0.25  # c < 0
    c = d(a) * d(b)
    r_out = c / (2.0 * c + eps * torch.where(c >= 0, 1.0, -1.0).to(F64)) * d(r)
    return [("a", a), ("b", b), ("r", r), ("eps", eps), ("r_out", r_out)]


def lrp_residual_split():
    n, eps = 517, 0.05
    a, b, r = randn(n), randn(n), randn(n)
    a[0], b[0] = 0.5, -0.5  # y = 0: denominator +eps
    a[1], b[1] = 0.0, 0.0
    y = d(a) + d(b)
    den = stab(y, eps)
    return [("a", a), ("b", b), ("r", r), ("eps", eps), ("r_a", d(a) / den * d(r)),
            ("r_b", d(b) / den * d(r))]


def lrp_softmax_rows():
    rows, cols = 7, 23
    x = randn(rows, cols, scale=3.0)
    x[2, 5:9] = float("-inf")  # masked scores: y = 0, relevance 0
    y = torch.softmax(x, dim=1)
    r = randn(rows, cols)
    xd = d(x)
    r_in = xd * (d(r) - d(y) * d(r).sum(dim=1, keepdim=True))
    r_in[2, 5:9] = 0.0  # strix: a -inf score gets 0 (x·0 would be NaN)
    return [("x", x), ("y", y), ("r", r), ("r_in", r_in)]


def lrp_rope():
    seq_len, reps, head_dim, eps = 9, 2, 16, 0.05
    rows, half = seq_len * reps, head_dim // 2
    inv_freq = 10000.0 ** (-torch.arange(half, dtype=F64) * 2.0 / head_dim)
    angles = torch.arange(seq_len, dtype=F64)[:, None] * inv_freq[None, :]
    cos, sin = torch.cos(angles).to(F32), torch.sin(angles).to(F32)
    x = randn(rows, head_dim)
    pos = torch.arange(rows) % seq_len
    c, s = cos[pos], sin[pos]
    lo, hi = x[:, 0::2], x[:, 1::2]
    y = torch.empty_like(x)
    y[:, 0::2] = lo * c - hi * s
    y[:, 1::2] = lo * s + hi * c
    r = randn(rows, head_dim)
    lo, hi, c, s = d(lo), d(hi), d(c), d(s)
    den_lo, den_hi = stab(d(y[:, 0::2]), eps), stab(d(y[:, 1::2]), eps)
    r_lo, r_hi = d(r[:, 0::2]), d(r[:, 1::2])
    r_in = torch.empty(rows, head_dim, dtype=F64)
    r_in[:, 0::2] = lo * c / den_lo * r_lo + lo * s / den_hi * r_hi
    r_in[:, 1::2] = -hi * s / den_lo * r_lo + hi * c / den_hi * r_hi
    return [("x", x), ("y", y), ("r", r), ("cos", cos), ("sin", sin), ("seq_len", seq_len),
            ("eps", eps), ("r_in", r_in)]


def lrp_stabilized_divide():
    n, eps = 301, 0.05
    r, den, gate = randn(n), randn(n), randn(n)
    den[0], den[1] = 0.0, -0.0  # sign(0) = +1 for both zeros
    gate[2], gate[3] = 0.0, -0.0  # a zero gate passes neither sign
    q = d(r) / stab(d(den), eps)
    zero = torch.zeros_like(q)
    return [("r", r), ("den", den), ("gate", gate), ("eps", eps), ("out_none", q),
            ("out_positive", torch.where(gate > 0, q, zero)),
            ("out_negative", torch.where(gate < 0, q, zero))]


# ---- fuzzy logic -------------------------------------------------------------------------------

def logic_inputs(n):
    a, b = uniform(n), uniform(n)
    a[:4] = torch.tensor([0.25, 0.75, 0.5, 0.0])  # a + b == 1 exactly: Łukasiewicz boundary
    b[:4] = torch.tensor([0.75, 0.25, 0.5, 1.0])
    a[4:8] = b[4:8] = torch.tensor([0.3, 0.6, 0.0, 1.0])  # ties: Gödel gives them to a
    return a, b


def logic_impl_inputs(n):
    """Inputs of the implication goldens: the edges and ties of logic_inputs, then the
    implication's own edges (a > b with b = 0 or a = 1, a = 0 < b, a tiny a > b)."""
    a, b = logic_inputs(n)
    a[8:14] = torch.tensor([1.0, 1.0, 0.0, 0.75, 0.02, 1.0])
    b[8:14] = torch.tensor([0.0, 0.5, 0.5, 0.0, 0.01, 0.999])
    return a, b


def logic_forward(norm, kind, a, b):
    """Forward of one norm, kind "conj", "disj" or "impl" (the residuum a → b); the Łukasiewicz
    clamp and the Gödel/Goguen branch are decided in float32."""
    disj = kind == "disj"
    if kind == "impl":
        one = torch.ones_like(d(a))
        if norm == "lukasiewicz":
            v32 = (1.0 - a) + b
            return torch.where(v32 < 1.0, 1.0 - d(a) + d(b), one)
        return torch.where(a <= b, one, d(b) / d(a) if norm == "product" else d(b))
    s32 = a + b
    if norm == "product":
        return d(a) + d(b) - d(a) * d(b) if disj else d(a) * d(b)
    if norm == "lukasiewicz":
        if disj:
            return torch.where(s32 < 1.0, d(a) + d(b), torch.ones_like(d(a)))
        return torch.where(s32 - 1.0 > 0.0, d(a) + d(b) - 1.0, torch.zeros_like(d(a)))
    a_wins = a >= b if disj else a <= b
    return torch.where(a_wins, d(a), d(b))


def logic_backward(norm, kind, a, b, g):
    disj = kind == "disj"
    a64, b64, g64 = d(a), d(b), d(g)
    zero = torch.zeros_like(g64)
    if kind == "impl":
        if norm == "lukasiewicz":
            linear = (1.0 - a) + b < 1.0
            return torch.where(linear, -g64, zero), torch.where(linear, g64, zero)
        holds = a <= b
        if norm == "product":
            return (torch.where(holds, zero, -(b64 / (a64 * a64)) * g64),
                    torch.where(holds, zero, g64 / a64))
        return zero, torch.where(holds, zero, g64)
    if norm == "product":
        return ((1.0 - b64) * g64, (1.0 - a64) * g64) if disj else (b64 * g64, a64 * g64)
    s32 = a + b
    if norm == "lukasiewicz":
        linear = s32 < 1.0 if disj else s32 - 1.0 > 0.0
        return torch.where(linear, g64, zero), torch.where(linear, g64, zero)
    a_wins = a >= b if disj else a <= b
    return torch.where(a_wins, g64, zero), torch.where(a_wins, zero, g64)


def logic_lrp(norm, kind, a, b, r, y, eps):
    disj = kind == "disj"
    a64, b64, r64 = d(a), d(b), d(r)
    zero = torch.zeros_like(r64)
    if kind == "impl":
        if norm == "lukasiewicz":  # za = -a, zb = b; the constant 1 is a bias, out of the den
            linear = (1.0 - a) + b < 1.0
            den = stab(b64 - a64, eps)
            return (torch.where(linear, -a64 / den * r64, zero),
                    torch.where(linear, b64 / den * r64, zero))
        return zero, r64.clone()  # Gödel, Goguen: all of r to the consequent (strix's choice)
    if norm == "product":
        if disj:
            den = stab(d(y), eps)
            return a64 * (2.0 - b64) / 2.0 / den * r64, b64 * (2.0 - a64) / 2.0 / den * r64
        share = a64 * b64 / stab(2.0 * d(y), eps) * r64
        return share, share.clone()
    s32 = a + b
    if norm == "lukasiewicz":
        linear = s32 < 1.0 if disj else s32 - 1.0 > 0.0
        den = stab(a64 + b64, eps)
        return (torch.where(linear, a64 / den * r64, zero),
                torch.where(linear, b64 / den * r64, zero))
    a_wins = a >= b if disj else a <= b
    return torch.where(a_wins, r64, zero), torch.where(a_wins, zero, r64)


def logic_autograd(norm, kind, a, b, g):
    """d(Σ g·y)/da, d(Σ g·y)/db of the forward in float64 by torch.autograd (LTNtorch 1.0's
    formulas for the implications)."""
    ad, bd = d(a).requires_grad_(True), d(b).requires_grad_(True)
    if kind == "impl":
        one = torch.ones_like(ad)
        if norm == "product":  # the safe denominator keeps a = 0 (where a <= b) out of the graph
            out = torch.where(ad <= bd, one, bd / torch.where(ad <= bd, one, ad))
        elif norm == "lukasiewicz":
            out = torch.clamp(1.0 - ad + bd, max=1.0)
        else:
            out = torch.where(ad <= bd, one, bd)
    elif norm == "product":
        out = ad + bd - ad * bd if kind == "disj" else ad * bd
    elif norm == "lukasiewicz":
        if kind == "disj":
            out = torch.clamp(ad + bd, max=1.0)
        else:
            out = torch.clamp(ad + bd - 1.0, min=0.0)
    else:
        out = torch.maximum(ad, bd) if kind == "disj" else torch.minimum(ad, bd)
    out.backward(d(g))
    zero = torch.zeros_like(d(a))  # no graph path to a (Gödel's implication): gradient 0
    return (zero if ad.grad is None else ad.grad), (zero if bd.grad is None else bd.grad)


def logic_case(norm, kinds=("conj", "disj"), inputs=logic_inputs):
    n, eps = 203, 0.05
    a, b = inputs(n)
    g, r = randn(n), randn(n)
    arrays = [("a", a), ("b", b), ("g", g), ("r", r), ("eps", eps)]
    for tag in kinds:
        y = logic_forward(norm, tag, a, b).to(F32)
        ga, gb = logic_backward(norm, tag, a, b, g)
        # autograd of the forward agrees away from kinks (Łukasiewicz boundary, Gödel ties; for
        # the implications every a == b)
        smooth = torch.ones(n, dtype=torch.bool)
        smooth[:8] = False
        if tag == "impl":
            smooth &= (a - b).abs() > 1e-6
        ad_grad, bd_grad = logic_autograd(norm, tag, a, b, g)
        check(f"logic {norm} {tag} backward = autograd", ga[smooth], ad_grad[smooth], 1e-12)
        check(f"logic {norm} {tag} backward = autograd (b)", gb[smooth], bd_grad[smooth], 1e-12)
        ra, rb = logic_lrp(norm, tag, a, b, r, y, eps)
        if tag == "impl" and norm == "lukasiewicz":  # conserves where linear, up to eps
            linear = (1.0 - a) + b < 1.0
            share = d(r) * (d(b) - d(a)) / stab(d(b) - d(a), eps)
            check(f"logic {norm} impl lrp conserves", (ra + rb)[linear], share[linear], 1e-12)
        arrays += [(f"y_{tag}", y), (f"ga_{tag}", ga), (f"gb_{tag}", gb), (f"ra_{tag}", ra),
                   (f"rb_{tag}", rb)]
    return arrays


def logic_impl_case(norm):
    return logic_case(norm, kinds=("impl",), inputs=logic_impl_inputs)


def logic_product():
    return logic_case("product")


def logic_lukasiewicz():
    return logic_case("lukasiewicz")


def logic_godel():
    return logic_case("godel")


def logic_impl_product():
    return logic_impl_case("product")


def logic_impl_lukasiewicz():
    return logic_impl_case("lukasiewicz")


def logic_impl_godel():
    return logic_impl_case("godel")


def logic_aggregator():
    n, cols, eps = 7, 300, 0.05  # cols > 256: two column spans on the CPU
    x = uniform(n, cols, lo=0.05, hi=1.0)
    g, r = randn(cols), randn(cols)
    arrays = [("x", x), ("grad_out", g), ("r_out", r), ("eps", eps)]
    for tag, p in (("p2", 2.0), ("p3_5", 3.5), ("pm1_5", -1.5)):
        xg = d(x).requires_grad_(True)
        mean_pow = (xg ** p).sum(dim=0) / n
        out = mean_pow ** (1.0 / p)
        out.backward(d(g))
        grad = d(g) * mean_pow.detach() ** (1.0 / p - 1.0) * d(x) ** (p - 1.0) / n
        check(f"aggregator {tag} backward = autograd", grad, xg.grad, 1e-10)
        r_in = d(x) ** p / stab(n * mean_pow.detach(), eps) * d(r)
        check(f"aggregator {tag} conserves", r_in.sum(dim=0),
              d(r) * (n * mean_pow.detach()) / stab(n * mean_pow.detach(), eps), 1e-10)
        arrays += [(f"p_{tag}", p), (f"mean_pow_{tag}", mean_pow.detach()),
                   (f"out_{tag}", out.detach()), (f"grad_in_{tag}", grad),
                   (f"r_in_{tag}", r_in)]
    return arrays


CASES = [lrp_linear, lrp_conv, lrp_conv_wide, lrp_avg_pool, lrp_avg_pool_overlap,
         lrp_bilinear_matmul, lrp_bilinear_matmul_wide, lrp_bilinear_elementwise,
         lrp_residual_split, lrp_softmax_rows, lrp_rope, lrp_stabilized_divide,
         logic_product, logic_lukasiewicz, logic_godel, logic_aggregator, logic_impl_product,
         logic_impl_lukasiewicz, logic_impl_godel]


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT_DIR, exist_ok=True)
    total = 0
    for case in CASES:
        seed(case.__name__)
        size = write_golden(case.__name__, case(), generator="tools/ref/ops_lrp_ref.py",
                            seed=f"crc32({case.__name__})")
        total += size
        print(f"{case.__name__:26s} {size:8d} bytes")
    print(f"total {total} bytes in {OUT_DIR} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
