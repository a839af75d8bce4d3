#!/work/venv/bin/python
"""retnet_lrp_ref.py - an independent PyTorch transcription of the RetNet layer's LRP rules
(strix/retnet.h) for tests/test_retnet.c, by the detach trick and gradient x input.

Run from the repository root with the torchscale venv:
    /work/venv/bin/python tools/ref/retnet_lrp_ref.py
It writes tests/golden/retnet/lrp.bin (format: tools/ref/ops_ref.py's write_golden).

The layer is layer 0 of retnet_ref.py's torchscale decoder (the same weights). Its forward is
written again here in float64 from the torchscale module's parameters, with each rule expressed
as a modification of the forward whose gradient x input is that rule (LXT's detach trick; the
epsilon stabilisers are dropped, so the test runs strix with epsilon 1e-9):
  linear maps, residual sums, the rotations and their scales: unchanged (gradient x input of a
      linear map is its LRP-0 / epsilon rule);
  RMSNorm (the two layer norms, pass-through rule): y = x * (y / x).detach();
  the group norm with the normalisation detached: o * rsqrt(mean(o^2) + eps).detach();
  GELU (identity rule): a * (gelu(a) / a).detach();
  the swish gate (signal-take-all): silu(g).detach() * on;
  the products gelu(fc1)*gate, Q~K~^T and G.V (the bilinear rule, half to each factor):
      0.5 * (a * b.detach() + a.detach() * b), likewise for the matmuls.
The retention is torchscale's recurrent-form function (its parallel form without the
detached row normalisation; retnet.h says why); the script checks that the unmodified
transcription reproduces the torchscale layer's parallel output (max difference printed).
Relevance R_x = x * d/dx (y_mod . (R_y / y).detach()), so Σ R_x = Σ R_y exactly.

Cases in lrp.bin: x (B,T,C) = retnet_ref.py's block input; r_rand = a random R_y and rel_rand its
R_x; r_last = y on the last step of every sequence (0 elsewhere: explaining the last position)
and rel_last its R_x. Params are retnet_ref.py's ("param.<name>" under the layer's names). This
script does not test strix and is not needed to run the tests.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import retnet_ref  # noqa: E402
from ops_ref import write_golden  # noqa: E402

D = torch.float64


def half_product(a, b):
    return 0.5 * (a * b.detach() + a.detach() * b)


def half_matmul(a, b):
    return 0.5 * (a @ b.detach() + a.detach() @ b)


def identity_rule(x, y):
    return x * (y / x).detach()


def layer_lrp_forward(layer, rel_pos_args, x, modified):
    """The layer's output on x (float64) with (modified) or without the LRP tricks."""
    ret = layer.retention
    H, dk = ret.num_heads, ret.key_dim
    dv = ret.head_dim
    eps = layer.retention_layer_norm.eps
    W = {n: p.detach().to(D) for n, p in layer.named_parameters()}
    B, T, C = x.shape

    def rms(v, w):
        y = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps) * w
        return identity_rule(v, y) if modified else y

    xn = rms(x, W["retention_layer_norm.weight"])
    q = xn @ W["retention.q_proj.weight"].T
    k = xn @ W["retention.k_proj.weight"].T * ret.scaling
    v = xn @ W["retention.v_proj.weight"].T
    g = xn @ W["retention.g_proj.weight"].T
    angle, decay = rel_pos_args
    idx = torch.arange(T, dtype=D)
    sin, cos = torch.sin(idx[:, None] * angle[None, :]), torch.cos(idx[:, None] * angle[None, :])

    def rot(z):  # torchscale's theta_shift on (B,H,T,dk)
        z1, z2 = z[..., ::2], z[..., 1::2]
        return z * cos + torch.stack((-z2, z1), dim=-1).flatten(-2) * sin

    qh = rot(q.view(B, T, H, dk).transpose(1, 2))
    kh = rot(k.view(B, T, H, dk).transpose(1, 2))
    vh = v.view(B, T, H, dv).transpose(1, 2)
    gamma = decay.exp()
    diff = idx[:, None] - idx[None, :]
    mask = torch.where(diff >= 0, gamma[:, None, None] ** diff.clamp(min=0),
                       torch.zeros((), dtype=D))
    mask = mask / mask.sum(-1, keepdim=True).sqrt()  # the per-row c folded into the queries
    scores = half_matmul(qh, kh.transpose(-1, -2)) if modified else qh @ kh.transpose(-1, -2)
    G = scores * mask
    o = half_matmul(G, vh) if modified else G @ vh
    o = o.transpose(1, 2)  # (B,T,H,dv)
    inv = torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + eps)
    on = (o * inv.detach() if modified else o * inv).reshape(B, T, H * dv)
    gated = F.silu(g).detach() * on if modified else F.silu(g) * on
    x1 = x + gated @ W["retention.out_proj.weight"].T
    xn2 = rms(x1, W["final_layer_norm.weight"])
    a = xn2 @ W["ffn.fc1.weight"].T
    ga = identity_rule(a, F.gelu(a)) if modified else F.gelu(a)
    bb = xn2 @ W["ffn.gate.weight"].T
    h = half_product(ga, bb) if modified else ga * bb
    return x1 + h @ W["ffn.fc2.weight"].T


def relevance(layer, rp, x, r_y):
    xg = x.clone().requires_grad_(True)
    y = layer_lrp_forward(layer, rp, xg, True)
    (y * (r_y / y).detach()).sum().backward()
    return (xg * xg.grad).detach()


def main():
    _, dec = retnet_ref.build()
    layer = dec.layers[0]
    torch.manual_seed(retnet_ref.SEED + 1)
    x32 = retnet_ref.randn(retnet_ref.B, retnet_ref.T, retnet_ref.C)
    x = x32.to(D)
    rp = (dec.retnet_rel_pos.angle.to(D), dec.retnet_rel_pos.decay.to(D))
    with torch.no_grad():
        y_ts = layer(x32, retention_rel_pos=dec.retnet_rel_pos(x.shape[1]))[0]
        y = layer_lrp_forward(layer, rp, x, False)
        y_mod = layer_lrp_forward(layer, rp, x, True)
    print(f"transcription vs torchscale layer: {(y - y_ts.to(D)).abs().max():.3g}; "
          f"modified forward vs plain: {(y_mod - y).abs().max():.3g}")
    torch.manual_seed(retnet_ref.SEED + 3)
    r_rand = torch.randn(x.shape, dtype=D)
    r_last = torch.zeros_like(y)
    r_last[:, -1] = y[:, -1]
    arrays = [("x", x32)]
    for name, r in (("rand", r_rand), ("last", r_last)):
        rel = relevance(layer, rp, x, r)
        print(f"{name}: sum R_y {r.sum():.6g}, sum R_x {rel.sum():.6g}; R_x at t = 0: "
              f"{rel[:, 0].abs().sum():.3g}")
        arrays += [("r_" + name, r), ("rel_" + name, rel)]
    for n, p in layer.named_parameters():
        arrays.append(("param." + n, p.detach()))
    write_golden("lrp", arrays, generator="tools/ref/retnet_lrp_ref.py", seed=retnet_ref.SEED,
                 out_dir=retnet_ref.OUT_DIR)


if __name__ == "__main__":
    main()
