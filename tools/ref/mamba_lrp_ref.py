#!/usr/bin/python3
"""mamba_lrp_ref.py - MambaLRP goldens (Jafari et al., NeurIPS 2024) of the Mamba block
(strix/mamba.h) for tests/test_mamba.c, as the paper computes them: Gradient×Input on a copy of
the block whose non-conserving parts are rewritten with detach() (the "detach trick"):
  - SiLU: x·[SiLU(x)/x] with the bracket detached, so it passes relevance through unchanged;
  - the selective SSM: Abar = exp(delta·A), Bbar = delta·B and C detached (they depend on the
    input), so the scan is linear in its input x (D kept);
  - the multiplicative gate y·SiLU(z): o/2 + [o/2] with the bracket detached (the half rule:
    each operand gets half);
  - RMSNorm: the 1/rms factor detached;
  - Linear, conv1d and the residual sum stay as they are (Gradient×Input there is LRP-0 with the
    bias in the denominator: strix's epsilon rule with bias_in_denominator and eps -> 0).
Everything runs in float64 on the float32 parameters of tools/ref/mamba_ref.py's model (same
seed and perturbation), through this file's own transcription of MambaMixer.slow_forward (the
block itself is also run to check the transcription gives transformers' output).

Run from the repository root: /work/venv/bin/python tools/ref/mamba_lrp_ref.py
It writes tests/golden/mamba/lrp.bin: for layer i, "layers.<i>.x" (B,T,C), "layers.<i>.r_y"
(the relevance of the output, y·m with m ~ U(-1, 1)), "layers.<i>.r_x" (the relevance of the
input); the two blocks stacked (layer 0 then 1): "stack.x", "stack.r_y" (y·m at the last step
t = T-1 only, zero elsewhere), "stack.r_x"; the parameters as "param.<name>". This script does
not test strix.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden  # noqa: E402
from mamba_ref import build_model, B, T, OUT_DIR  # noqa: E402

F64 = torch.float64


def silu_identity(v):
    return v * (F.silu(v) / v).detach()


def block_lrp_forward(block, x, check=False):
    """The block y = x + mixer(norm(x)) with the MambaLRP detaches (float64)."""
    mix = block.mixer
    w = block.norm.weight.to(F64)
    eps = block.norm.variance_epsilon
    inv = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    h = w * (x * (inv if check else inv.detach()))
    proj = F.linear(h, mix.in_proj.weight.to(F64)).transpose(1, 2)
    xs, gate = proj.chunk(2, dim=1)
    conv = F.conv1d(xs, mix.conv1d.weight.to(F64), mix.conv1d.bias.to(F64),
                    padding=mix.conv_kernel_size - 1, groups=mix.intermediate_size)[..., :T]
    u = F.silu(conv) if check else silu_identity(conv)
    R, S = mix.time_step_rank, mix.ssm_state_size
    params = F.linear(u.transpose(1, 2), mix.x_proj.weight.to(F64))
    dt, Bm, Cm = torch.split(params, [R, S, S], dim=-1)
    delta = F.softplus(F.linear(dt, mix.dt_proj.weight.to(F64),
                                mix.dt_proj.bias.to(F64))).transpose(1, 2)
    A = -torch.exp(mix.A_log.to(F64))
    abar = torch.exp(A[None, :, None, :] * delta[:, :, :, None])
    bbar = delta[:, :, :, None] * Bm[:, None, :, :]
    if not check:
        abar, bbar, Cm = abar.detach(), bbar.detach(), Cm.detach()
    state = torch.zeros(x.shape[0], mix.intermediate_size, S, dtype=F64)
    ys = []
    for t in range(T):
        state = abar[:, :, t, :] * state + bbar[:, :, t, :] * u[:, :, t, None]
        ys.append(torch.matmul(state, Cm[:, t, :].unsqueeze(-1))[:, :, 0])
    y = torch.stack(ys, dim=-1) + u * mix.D.to(F64)[None, :, None]
    g = F.silu(gate) if check else silu_identity(gate)
    o = y * g
    if not check:
        o = o / 2 + (o / 2).detach()
    return x + F.linear(o.transpose(1, 2), mix.out_proj.weight.to(F64))


def relevance(blocks, x, mask):
    """R_x = x·∂(y·m)/∂x of the stacked detach-trick blocks, with R_y = y·m."""
    x = x.clone().requires_grad_(True)
    y = x
    for b in blocks:
        y = block_lrp_forward(b, y)
    y.backward(mask)
    return (y * mask).detach(), (x * x.grad).detach()


def main():
    _, model = build_model()
    torch.manual_seed(99)
    blocks = list(model.backbone.layers)
    C = model.config.hidden_size
    arrays = []
    with torch.no_grad():  # the transcription (no detaches) gives transformers' block output
        xt = torch.randn(B, T, C)
        ref = blocks[0](xt).to(F64)
        mine = block_lrp_forward(blocks[0], xt.to(F64), check=True)
        assert (ref - mine).abs().max() < 1e-5, (ref - mine).abs().max()
    for i, b in enumerate(blocks):
        x = torch.randn(B, T, C, dtype=F64)
        m = torch.rand(B, T, C, dtype=F64) * 2 - 1
        r_y, r_x = relevance([b], x, m)
        arrays += [(f"layers.{i}.x", x), (f"layers.{i}.r_y", r_y), (f"layers.{i}.r_x", r_x)]
    x = torch.randn(B, T, C, dtype=F64)
    m = torch.zeros(B, T, C, dtype=F64)
    m[:, T - 1, :] = torch.rand(B, C, dtype=F64) * 2 - 1
    r_y, r_x = relevance(blocks, x, m)
    arrays += [("stack.x", x), ("stack.r_y", r_y), ("stack.r_x", r_x)]
    for name, p in model.named_parameters():
        if name.startswith("backbone.layers."):
            arrays.append(("param." + name, p.detach()))
    write_golden("lrp", arrays, generator="tools/ref/mamba_lrp_ref.py", seed=99, out_dir=OUT_DIR)


if __name__ == "__main__":
    main()
