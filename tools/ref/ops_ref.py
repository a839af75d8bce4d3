#!/usr/bin/python3
"""ops_ref.py - writes the PyTorch golden files of the backend primitives for tests/test_ops.c.

Run from the repository root with Debian's python3 (PyTorch 1.13):
    /usr/bin/python3 tools/ref/ops_ref.py
It writes tests/golden/ops/<case>.bin (about 0.5 MB in all). Each file holds inputs and expected
outputs as float32 arrays (integer indices are stored as exact floats). Where strix decides an
edge case differently from PyTorch (docs/SEMANTICS.md, edge cases: an all -inf row has "no mass"), the
expected rows are overwritten with strix's values and the override is commented here.

File format (little-endian), read by tests/testlib.h:
    magic    8 bytes  b"STRXGLD1"
    note     u32 length, then UTF-8 bytes (generator, torch version, seed)
    count    u32
    count x  { u32 name length, name bytes, u32 ndim, i64 shape[ndim], f32 data[prod(shape)] }
This script does not test anything and is not needed to run the tests.
"""
import math
import os
import struct

import torch

SEED = 1234
OUT_DIR = os.path.join("tests", "golden", "ops")
F32 = torch.float32
NEG_INF = float("-inf")


def write_golden(case, arrays, generator="tools/ref/ops_ref.py", seed=SEED, out_dir=None):
    """arrays: list of (name, tensor or number). Everything is stored as float32. `generator` and
    `seed` go into the file's note; out_dir defaults to tests/golden/ops."""
    note = f"{generator}; torch {torch.__version__}; seed {seed}".encode()
    out = bytearray(b"STRXGLD1")
    out += struct.pack("<I", len(note)) + note
    out += struct.pack("<I", len(arrays))
    for name, value in arrays:
        t = torch.as_tensor(value).detach().to(F32).contiguous()
        if t.dim() == 0:
            t = t.reshape(1)
        raw = name.encode()
        out += struct.pack("<I", len(raw)) + raw
        out += struct.pack("<I", t.dim())
        out += struct.pack(f"<{t.dim()}q", *t.shape)
        out += t.numpy().astype("<f4").tobytes()
    path = os.path.join(out_dir or OUT_DIR, case + ".bin")
    with open(path, "wb") as f:
        f.write(out)
    return len(out)


def randn(*shape, scale=1.0):
    return torch.randn(*shape, dtype=F32) * scale


def grad_of(fn, x, grad_out):
    """d(sum(fn(x)·grad_out))/dx by autograd."""
    x = x.clone().requires_grad_(True)
    y = fn(x)
    y.backward(grad_out)
    return y.detach(), x.grad.detach()


def softmax_rows():
    x = randn(37, 129, scale=3.0)
    x[0, 5] = x[0, 17] = x[0, 100] = NEG_INF  # some -inf: exact zeros there
    x[1, :] = NEG_INF  # all -inf: strix gives a zero row (torch gives NaN)
    dy = randn(37, 129)
    y, dx = grad_of(lambda t: torch.softmax(t, dim=1), x, dy)
    y[1, :] = 0.0  # docs/SEMANTICS.md: no mass -> zeros
    dx[1, :] = 0.0
    return [("x", x), ("dy", dy), ("y", y), ("dx", dx)]


def logsumexp_rows():
    x = randn(23, 77, scale=4.0)
    x[0, 3] = x[0, 40] = NEG_INF
    x[1, :] = NEG_INF  # all -inf -> -inf (torch agrees)
    return [("x", x), ("out", torch.logsumexp(x, dim=1))]


def layer_norm():
    rows, cols, eps = 33, 96, 1e-5
    x = randn(rows, cols, scale=2.0) + 0.5
    gamma = randn(cols) * 0.5 + 1.0
    beta = randn(cols) * 0.2
    dout = randn(rows, cols)
    fn = lambda t: torch.nn.functional.layer_norm(t, (cols,), gamma, beta, eps)
    out, dx = grad_of(fn, x, dout)
    plain = lambda t: torch.nn.functional.layer_norm(t, (cols,), None, None, eps)
    out_plain, dx_plain = grad_of(plain, x, dout)
    mean = x.mean(dim=1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=1, keepdim=True)
    std = torch.sqrt(var + eps)
    xhat = (x - mean) / std
    return [("x", x), ("gamma", gamma), ("beta", beta), ("eps", eps), ("dout", dout),
            ("out", out), ("xhat", xhat), ("row_std", std.reshape(rows)), ("dx", dx),
            ("out_plain", out_plain), ("dx_plain", dx_plain)]


ACTIVATIONS = [
    ("relu", torch.relu),
    ("neg", torch.neg),
    ("tanh", torch.tanh),
    ("sigmoid", torch.sigmoid),
    ("silu", torch.nn.functional.silu),
    ("exp", torch.exp),
    ("gelu_tanh", lambda t: torch.nn.functional.gelu(t, approximate="tanh")),
    ("gelu", torch.nn.functional.gelu),
]


def activations():
    x = torch.cat([torch.linspace(-8.0, 8.0, 961, dtype=F32), randn(32, scale=2.0),
                   torch.tensor([0.0, 1e-3, -1e-3, 1e-6, -1e-6, 20.0, -20.0], dtype=F32)])
    dy = randn(x.numel())
    arrays = [("x", x), ("dy", dy)]
    for name, fn in ACTIVATIONS:
        y, dx = grad_of(fn, x, dy)
        arrays += [("y_" + name, y), ("dx_" + name, dx)]
    return arrays


def cross_entropy():
    rows, vocab = 19, 65
    logits = randn(rows, vocab, scale=2.0)
    targets = torch.randint(0, vocab, (rows,))
    targets[3] = -1  # ignored row: loss 0, gradient 0
    logits[5, :10] = NEG_INF  # -inf non-target logits: finite loss, gradient exactly 0
    targets[5] = 20
    valid = int((targets >= 0).sum())
    grad_scale = 1.0 / valid
    x = logits.clone().requires_grad_(True)
    losses = torch.nn.functional.cross_entropy(x, targets, reduction="none", ignore_index=-1)
    (losses.sum() * grad_scale).backward()
    return [("logits", logits), ("targets", targets.to(F32)), ("grad_scale", grad_scale),
            ("losses", losses.detach()), ("dlogits", x.grad)]


def attn_softmax_causal():
    slices, T = 3, 17
    scale = 1.0 / math.sqrt(8.0)
    scores = randn(slices, T, T, scale=3.0)
    scores[1, 5, 2] = NEG_INF  # one masked key: exact zero there
    scores[2, 0, 0] = NEG_INF  # row 0 of slice 2 fully masked: strix gives zeros (torch NaN)
    dprobs = randn(slices, T, T)
    above = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)

    def fn(s):
        return torch.softmax((s * scale).masked_fill(above, NEG_INF), dim=-1)

    probs, dscores = grad_of(fn, scores, dprobs)
    probs[2, 0, :] = 0.0
    dscores[2, 0, :] = 0.0
    return [("scores", scores), ("dprobs", dprobs), ("scale", scale), ("probs", probs),
            ("dscores", dscores)]


def rope():
    batch_heads, seq_len, head_dim, pos0, max_pos = 6, 9, 16, 3, 16
    x = randn(batch_heads * seq_len, head_dim)
    half = head_dim // 2
    inv_freq = 10000.0 ** (-torch.arange(half, dtype=torch.float64) * 2.0 / head_dim)
    angles = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv_freq[None, :]
    cos, sin = torch.cos(angles).to(F32), torch.sin(angles).to(F32)

    def rotate(t, sign):
        pos = pos0 + torch.arange(t.shape[0]) % seq_len
        c, s = cos[pos], sin[pos] * sign
        lo, hi = t[:, 0::2], t[:, 1::2]
        out = torch.empty_like(t)
        out[:, 0::2] = lo * c - hi * s
        out[:, 1::2] = lo * s + hi * c
        return out

    return [("x", x), ("cos", cos), ("sin", sin), ("seq_len", seq_len), ("pos0", pos0),
            ("out", rotate(x, 1.0)), ("inv", rotate(x, -1.0))]


def permute_0213():
    x = randn(2, 3, 5, 7)
    return [("x", x), ("out", x.permute(0, 2, 1, 3).contiguous())]


def gather_rows():
    table = randn(50, 24)
    idx = torch.randint(0, 50, (37,))
    idx[:3] = torch.tensor([49, 0, 49])
    return [("table", table), ("idx", idx.to(F32)),
            ("out", torch.nn.functional.embedding(idx, table))]


def scatter_add_rows():
    table = randn(20, 24)
    src = randn(37, 24)
    idx = torch.randint(0, 20, (37,))
    idx[:4] = torch.tensor([7, 7, 7, 19])  # duplicates add in ascending i
    return [("table", table), ("src", src), ("idx", idx.to(F32)),
            ("out", table.index_add(0, idx, src))]


def adam_step():
    n, step = 1000, 3
    param, grad, m = randn(n), randn(n), randn(n, scale=0.1)
    v = randn(n, scale=0.1) ** 2
    lr, beta1, beta2, eps = (torch.tensor(x, dtype=F32) for x in (1e-3, 0.9, 0.95, 1e-8))
    bc1 = (1.0 - beta1 ** step).to(F32)
    bc2 = (1.0 - beta2 ** step).to(F32)
    m_new = beta1 * m + (1.0 - beta1) * grad
    v_new = beta2 * v + (1.0 - beta2) * (grad * grad)
    p_new = param - lr * (m_new / bc1) / (torch.sqrt(v_new / bc2) + eps)
    return [("param", param), ("grad", grad), ("m", m), ("v", v), ("lr", lr), ("beta1", beta1),
            ("beta2", beta2), ("eps", eps), ("bc1", bc1), ("bc2", bc2),
            ("param_out", p_new), ("m_out", m_new), ("v_out", v_new)]


def top_k_rows():
    x = randn(13, 50)  # continuous values: no ties (tie order is tested in C)
    x[4, 7] = float("nan")  # NaN ranks first with largest, last with smallest (torch.topk)
    small = randn(4, 9)
    arrays = [("x", x), ("small", small)]
    for largest in (True, False):
        tag = "largest" if largest else "smallest"
        vals, idx = torch.topk(x, 7, dim=1, largest=largest, sorted=True)
        arrays += [("vals_" + tag, vals), ("idx_" + tag, idx.to(F32))]
        vals, idx = torch.topk(small, 9, dim=1, largest=largest, sorted=True)  # k == cols
        arrays += [("small_vals_" + tag, vals), ("small_idx_" + tag, idx.to(F32))]
    return arrays


def column_sums():
    x = randn(37, 300)
    prev = randn(300)
    return [("x", x), ("prev", prev), ("out", x.sum(dim=0)),
            ("out_beta", 0.5 * prev + x.sum(dim=0))]


def add_row_vector():
    x, row = randn(37, 53), randn(53)
    return [("x", x), ("row", row), ("out", x + row)]


def axpby():
    x, y = randn(1000), randn(1000)
    return [("x", x), ("y", y), ("alpha", 0.7), ("beta", -1.3), ("out", 0.7 * x + -1.3 * y)]


def gemm_ex():
    """out = op(A)·op(B) + beta·out for every transpose pair; reference in float64."""
    m, k, n = 17, 33, 29
    arrays = [("m", m), ("k", k), ("n", n)]
    for ta in (0, 1):
        for tb in (0, 1):
            a = randn(k, m) if ta else randn(m, k)
            b = randn(n, k) if tb else randn(k, n)
            c = randn(m, n)
            prod = (a.double().T if ta else a.double()) @ (b.double().T if tb else b.double())
            tag = f"{'t' if ta else 'n'}{'t' if tb else 'n'}"
            arrays += [("a_" + tag, a), ("b_" + tag, b), ("c_" + tag, c),
                       ("out0_" + tag, prod.to(F32)), ("out1_" + tag, (prod + c.double()).to(F32))]
    return arrays


CASES = [softmax_rows, logsumexp_rows, layer_norm, activations, cross_entropy,
         attn_softmax_causal, rope, permute_0213, gather_rows, scatter_add_rows, adam_step,
         top_k_rows, column_sums, add_row_vector, axpby, gemm_ex]


def main():
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    os.makedirs(OUT_DIR, exist_ok=True)
    total = 0
    for case in CASES:
        size = write_golden(case.__name__, case())
        total += size
        print(f"{case.__name__:22s} {size:8d} bytes")
    print(f"total {total} bytes in {OUT_DIR} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
