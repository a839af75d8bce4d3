#!/usr/bin/python3
"""ops_cnn_ref.py - writes the PyTorch golden files of the CNN primitives (include/strix/ops/cnn.h)
for tests/ops/cases_cnn.c.

Run from the repository root with Debian's python3 (PyTorch 1.13):
    /usr/bin/python3 tools/ref/ops_cnn_ref.py
It writes tests/golden/ops/cnn_*.bin (format: tools/ref/ops_ref.py). References:
  im2col / col2im_add     F.unfold / F.fold (col2im into a non-zero base: base + fold(y))
  max pool / unpool       F.max_pool2d(return_indices=True) and its autograd
  avg pool / backward     F.avg_pool2d(count_include_pad=True) and its autograd
  add_channel_vector      x + vec[None, :, None]
  BatchNorm               F.batch_norm(training=True) + autograd (input, weight, bias), the
                          running statistics torch updates (momentum 0.1, unbiased variance), and
                          F.batch_norm(training=False) + autograd for the eval pair
  GroupNorm               F.group_norm + autograd
  conv2d forward/backward F.conv2d + autograd (weight and bias grads added into a random base)
Inputs are float32; the expected values are computed in float64 and rounded to float32 (selection
results - im2col, max pool values and indices - are exact). Geometry and eps are stored as scalars.
This script does not test anything and is not needed to run the tests.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden, randn  # noqa: E402

SEED = 4321
F64 = torch.float64


def geom(kh, kw, sh, sw, ph, pw):
    return [("kh", kh), ("kw", kw), ("sh", sh), ("sw", sw), ("ph", ph), ("pw", pw)]


def grad64(fn, inputs, grad_out):
    """fn(*inputs) and the gradients of sum(fn·grad_out) w.r.t. each input, all in float64."""
    leaves = [t.detach().to(F64).requires_grad_(True) for t in inputs]
    y = fn(*leaves)
    y.backward(grad_out.to(F64))
    return y.detach(), [t.grad.detach() for t in leaves]


def im2col_case(n, c, h, w, kh, kw, sh, sw, ph, pw):
    def make():
        x = randn(n, c, h, w)
        args = dict(kernel_size=(kh, kw), stride=(sh, sw), padding=(ph, pw))
        col = F.unfold(x, **args)  # (n, c·kh·kw, oh·ow): a copy, exact
        y = randn(*col.shape)
        base = randn(n, c, h, w)
        out = base.to(F64) + F.fold(y.to(F64), output_size=(h, w), **args)
        return [("x", x), ("col", col), ("y", y), ("base", base), ("fold", out)] + \
            geom(kh, kw, sh, sw, ph, pw)
    return make


def max_pool_case(n, c, h, w, kh, kw, sh, sw, ph, pw, ties=False):
    def make():
        x = randn(n, c, h, w)
        if ties:  # a coarse grid: many equal maxima, the first one must win
            x = torch.round(x * 2.0) / 2.0
        args = dict(kernel_size=(kh, kw), stride=(sh, sw), padding=(ph, pw))
        out, idx = F.max_pool2d(x, return_indices=True, **args)
        dy = randn(*out.shape)
        _, (dx,) = grad64(lambda t: F.max_pool2d(t, **args), [x], dy)
        base = randn(n, c, h, w)
        return [("x", x), ("out", out), ("argmax", idx.float()), ("dy", dy), ("dx", dx),
                ("base", base), ("dx_acc", base.to(F64) + dx)] + geom(kh, kw, sh, sw, ph, pw)
    return make


def avg_pool_case(n, c, h, w, kh, kw, sh, sw, ph, pw):
    def make():
        x = randn(n, c, h, w)
        args = dict(kernel_size=(kh, kw), stride=(sh, sw), padding=(ph, pw),
                    count_include_pad=True)
        dy_shape = F.avg_pool2d(x, **args).shape
        dy = randn(*dy_shape)
        out, (dx,) = grad64(lambda t: F.avg_pool2d(t, **args), [x], dy)
        base = randn(n, c, h, w)
        return [("x", x), ("out", out), ("dy", dy), ("dx", dx), ("base", base),
                ("dx_acc", base.to(F64) + dx)] + geom(kh, kw, sh, sw, ph, pw)
    return make


def add_channel_vector():
    x = randn(3, 4, 35)
    vec = randn(4)
    return [("x", x), ("vec", vec), ("out", x + vec[None, :, None])]


def batch_norm_case(n, c, s, eps, offset=0.0):
    def make():
        x = randn(n, c, s, scale=2.0) + offset
        gamma, beta, dy = randn(c), randn(c), randn(n, c, s)
        x64 = x.to(F64)
        mean = x64.mean(dim=(0, 2), keepdim=True)
        var = x64.var(dim=(0, 2), unbiased=False, keepdim=True)
        std = torch.sqrt(var + eps)

        def train(t, g, b):
            return F.batch_norm(t, None, None, g, b, training=True, eps=eps)
        out, (dx, dgamma, dbeta) = grad64(train, [x, gamma, beta], dy)
        out_plain, (dx_plain,) = grad64(lambda t: train(t, None, None), [x], dy)
        # running statistics: what torch's BatchNorm folds in (momentum 0.1, unbiased var)
        rm0 = randn(c)
        rv0 = torch.rand(c, dtype=torch.float32) + 0.5
        rm1, rv1 = rm0.to(F64).clone(), rv0.to(F64).clone()
        F.batch_norm(x64, rm1, rv1, None, None, training=True, momentum=0.1, eps=eps)

        def evaluate(t, g, b):
            return F.batch_norm(t, rm0.to(F64), rv0.to(F64), g, b, training=False, eps=eps)
        out_eval, (dx_eval, dgamma_eval, dbeta_eval) = grad64(evaluate, [x, gamma, beta], dy)
        std_eval = torch.sqrt(rv0.to(F64) + eps)
        xhat_eval = (x64 - rm0.to(F64)[None, :, None]) / std_eval[None, :, None]
        return [("x", x), ("gamma", gamma), ("beta", beta), ("dy", dy), ("eps", eps),
                ("out", out), ("xhat", (x64 - mean) / std), ("std", std.reshape(c)),
                ("dx", dx), ("dgamma", dgamma), ("dbeta", dbeta),
                ("out_plain", out_plain), ("dx_plain", dx_plain),
                ("momentum", 0.1), ("rm0", rm0), ("rv0", rv0), ("rm1", rm1), ("rv1", rv1),
                ("out_eval", out_eval), ("xhat_eval", xhat_eval), ("std_eval", std_eval),
                ("dx_eval", dx_eval), ("dgamma_eval", dgamma_eval), ("dbeta_eval", dbeta_eval)]
    return make


def group_norm_case(n, c, s, groups, eps):
    def make():
        x = randn(n, c, s, scale=2.0) + 1.0
        gamma, beta, dy = randn(c), randn(c), randn(n, c, s)
        x64 = x.to(F64).reshape(n, groups, -1)
        mean = x64.mean(dim=2, keepdim=True)
        std = torch.sqrt(x64.var(dim=2, unbiased=False, keepdim=True) + eps)
        xhat = ((x64 - mean) / std).reshape(n, c, s)
        out, (dx, dgamma, dbeta) = grad64(lambda t, g, b: F.group_norm(t, groups, g, b, eps),
                                          [x, gamma, beta], dy)
        out_plain, (dx_plain,) = grad64(lambda t: F.group_norm(t, groups, None, None, eps),
                                        [x], dy)
        return [("x", x), ("gamma", gamma), ("beta", beta), ("dy", dy), ("eps", eps),
                ("groups", groups), ("out", out), ("xhat", xhat), ("std", std.reshape(n, groups)),
                ("dx", dx), ("dgamma", dgamma), ("dbeta", dbeta), ("out_plain", out_plain),
                ("dx_plain", dx_plain)]
    return make


def conv2d_case(n, c, h, w, oc, kh, kw, sh, sw, ph, pw, bias=True):
    def make():
        x, wt, b = randn(n, c, h, w), randn(oc, c, kh, kw, scale=0.3), randn(oc)
        args = dict(stride=(sh, sw), padding=(ph, pw))
        z = F.conv2d(x.to(F64), wt.to(F64), None, **args)
        dy = randn(*z.shape)
        fn = (lambda xx, ww, bb: F.conv2d(xx, ww, bb, **args)) if bias else \
            (lambda xx, ww: F.conv2d(xx, ww, None, **args))
        out, grads = grad64(fn, [x, wt, b] if bias else [x, wt], dy)
        dw_base, db_base = randn(*wt.shape), randn(oc)
        arrays = [("x", x), ("weight", wt), ("dy", dy), ("z", z), ("out", out), ("dx", grads[0]),
                  ("dw_base", dw_base), ("dw", dw_base.to(F64) + grads[1]), ("oc", oc)]
        if bias:
            arrays += [("bias", b), ("db_base", db_base), ("db", db_base.to(F64) + grads[2])]
        return arrays + geom(kh, kw, sh, sw, ph, pw)
    return make


CASES = [
    # im2col / col2im: (n, c, h, w, kh, kw, sh, sw, ph, pw)
    ("cnn_im2col_k3s1p1", im2col_case(2, 3, 7, 5, 3, 3, 1, 1, 1, 1)),
    ("cnn_im2col_k2x3s2x1p0x1", im2col_case(1, 2, 9, 8, 2, 3, 2, 1, 0, 1)),
    ("cnn_im2col_k5x4s2x3p2x1", im2col_case(2, 1, 17, 11, 5, 4, 2, 3, 2, 1)),
    ("cnn_im2col_k2s3p1", im2col_case(1, 2, 8, 7, 2, 2, 3, 3, 1, 1)),  # stride > kernel
    ("cnn_im2col_k1s2", im2col_case(2, 3, 7, 6, 1, 1, 2, 2, 0, 0)),
    # max pool
    ("cnn_max_pool_k2s2", max_pool_case(1, 2, 17, 23, 2, 2, 2, 2, 0, 0)),
    ("cnn_max_pool_k3s2p1", max_pool_case(2, 2, 7, 5, 3, 3, 2, 2, 1, 1)),
    ("cnn_max_pool_k3x2s1x2p1x0", max_pool_case(1, 3, 9, 7, 3, 2, 1, 2, 1, 0)),
    ("cnn_max_pool_ties", max_pool_case(2, 2, 6, 5, 3, 3, 1, 1, 1, 1, ties=True)),
    # average pool
    ("cnn_avg_pool_k2s2", avg_pool_case(1, 2, 17, 23, 2, 2, 2, 2, 0, 0)),
    ("cnn_avg_pool_k3s1p1", avg_pool_case(2, 2, 7, 5, 3, 3, 1, 1, 1, 1)),
    ("cnn_avg_pool_k3x2s2x1p1x0", avg_pool_case(1, 3, 9, 7, 3, 2, 2, 1, 1, 0)),
    ("cnn_add_channel_vector", add_channel_vector),
    # BatchNorm: (n, c, spatial, eps[, offset])
    ("cnn_batch_norm_a", batch_norm_case(4, 3, 35, 1e-5, offset=3.0)),
    ("cnn_batch_norm_b", batch_norm_case(3, 2, 77, 1e-3)),
    ("cnn_batch_norm_c", batch_norm_case(7, 4, 1, 1e-5)),  # BatchNorm1d-like: spatial 1
    # GroupNorm: (n, c, spatial, groups, eps)
    ("cnn_group_norm_a", group_norm_case(3, 6, 35, 3, 1e-5)),
    ("cnn_group_norm_b", group_norm_case(2, 4, 17, 1, 1e-5)),
    ("cnn_group_norm_c", group_norm_case(2, 6, 5, 6, 1e-3)),
    # the fused Conv2d: n 5 spans two groups of STRIX_CONV_GROUP = 4
    ("cnn_conv2d_k3s1p1", conv2d_case(5, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1)),
    ("cnn_conv2d_k2x3s2x1p0x1_nobias", conv2d_case(3, 2, 8, 6, 5, 2, 3, 2, 1, 0, 1, bias=False)),
]


def main():
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    os.makedirs(os.path.join("tests", "golden", "ops"), exist_ok=True)
    total = 0
    for name, make in CASES:
        size = write_golden(name, make(), generator="tools/ref/ops_cnn_ref.py", seed=SEED)
        total += size
        print(f"{name:28s} {size:8d} bytes")
    print(f"total {total} bytes (torch {torch.__version__})")


if __name__ == "__main__":
    main()
