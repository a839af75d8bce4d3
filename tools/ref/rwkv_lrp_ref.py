#!/work/venv/bin/python
"""rwkv_lrp_ref.py - an independent float64 PyTorch transcription of the RWKV block's LRP
(strix/rwkv.h, strix_rwkv_block_relevance) for tests/test_rwkv.c.

Run from the repository root: /work/venv/bin/python tools/ref/rwkv_lrp_ref.py
It writes tests/golden/rwkv/lrp_block<l>.bin (ops_ref.py's write_golden): x, r_y, eps, r_x and
"param.<name>" of the block (layer 0 with pre_ln, layer 1 without) of rwkv_ref.py's model.

The rule as gradient x input: the block's forward is rewritten in float64 from transformers'
RwkvBlock / rwkv_linear_attention_cpu, with
  - every sum node z (Linear outputs, token-shift mixes, residual sums, the WKV output
    (e1·num + e2·v)/den and the state num <- e1·num + e2·v, LayerNorm's γ(x − mean)/std) made
    an epsilon node: forward value unchanged, gradient scaled by value/stab(z)
    (stab(z) = z + eps·sign z, sign 0 = +1; LayerNorm: value = z + β, z pre-bias);
  - the detached factors: LayerNorm's std, the WKV's e1, e2, den and max (so keys get no
    relevance), the receptance gates σ(.) (signal-take-all), one factor of relu(z)²;
then r_x = x ⊙ ∂(Σ y·(r_y / stab y))/∂x, the output y = h1 + ffn being the last sum node.
The transcription's forward is checked against transformers' block before anything is written.
This script does not test strix and is not needed to run the tests.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden  # noqa: E402
import rwkv_ref  # noqa: E402

F64 = torch.float64


def stab(z, eps):
    return z + eps * torch.where(z >= 0, torch.ones_like(z), -torch.ones_like(z))


def node(z, eps, value=None):
    v = z if value is None else value
    k = (v / stab(z, eps)).detach()
    return z * k + (v - z * k).detach()


def layer_norm(x, ln, eps):
    w, b = ln.weight.detach().to(F64), ln.bias.detach().to(F64)
    mean = x.mean(-1, keepdim=True)
    std = torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + ln.eps).detach()
    z = w * (x - mean) / std
    return node(z, eps, z + b)


def linear(x, lin, eps):
    return node(x @ lin.weight.detach().to(F64).t(), eps)


def shifted(x):
    return torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)


def mix(x, prev, mu, eps):
    mu = mu.detach().to(F64)
    return node(x * mu + prev * (1 - mu), eps)


def wkv(time_decay, time_first, k, v, eps):
    """rwkv_linear_attention_cpu with e1, e2, den and max detached, the sums epsilon nodes."""
    w = -torch.exp(time_decay.detach().to(F64))
    u = time_first.detach().to(F64)
    k = k.detach()
    num = torch.zeros_like(k[:, 0])
    den = torch.zeros_like(k[:, 0])
    mx = torch.zeros_like(k[:, 0]) - 1e38
    out = []
    for t in range(k.shape[1]):
        kt, vt = k[:, t], v[:, t]
        mo = torch.maximum(mx, kt + u)
        e1, e2 = torch.exp(mx - mo), torch.exp(kt + u - mo)
        d = (e1 * den + e2).detach()
        out.append(node((e1 * num + e2 * vt) / d, eps))
        ms = torch.maximum(mx + w, kt)
        f1, f2 = torch.exp(mx + w - ms), torch.exp(kt - ms)
        num = node(f1 * num + f2 * vt, eps)
        den = (f1 * den + f2).detach()
        mx = ms
    return torch.stack(out, dim=1)


def block_lrp_forward(block, x, eps):
    att, ffn = block.attention, block.feed_forward
    h = layer_norm(x, block.pre_ln, eps) if block.layer_id == 0 else x
    a = layer_norm(h, block.ln1, eps)
    pa = shifted(a)
    xk = mix(a, pa, att.time_mix_key, eps)
    xv = mix(a, pa, att.time_mix_value, eps)
    xr = mix(a, pa, att.time_mix_receptance, eps)
    k, v = linear(xk, att.key, eps), linear(xv, att.value, eps)
    r = torch.sigmoid(linear(xr, att.receptance, eps)).detach()
    gated = r * wkv(att.time_decay, att.time_first, k, v, eps)
    h1 = node(h + linear(gated, att.output, eps), eps)
    c = layer_norm(h1, block.ln2, eps)
    pc = shifted(c)
    fk = mix(c, pc, ffn.time_mix_key, eps)
    fr = mix(c, pc, ffn.time_mix_receptance, eps)
    z = linear(fk, ffn.key, eps)
    kq = torch.relu(z) * torch.relu(z).detach()
    rr = torch.sigmoid(linear(fr, ffn.receptance, eps)).detach()
    return h1 + rr * linear(kq, ffn.value, eps)


def case(model, layer, seed, eps):
    torch.manual_seed(seed)
    block = model.rwkv.blocks[layer]
    B, T, C = rwkv_ref.B, rwkv_ref.T, rwkv_ref.C
    x32 = torch.randn(B, T, C)
    r_y = torch.randn(B, T, C).to(F64)
    with torch.no_grad():
        y_hf = block(x32)[0].to(F64)
    x = x32.to(F64).requires_grad_(True)
    y = block_lrp_forward(block, x, eps)
    err = (y - y_hf).abs().max().item()
    assert err < 1e-5, f"transcription's forward differs from transformers' by {err}"
    (y * (r_y / stab(y, eps)).detach()).sum().backward()
    r_x = (x * x.grad).detach()
    print(f"layer {layer}: forward vs transformers {err:.2e}, sum r_y {r_y.sum():.6f}, "
          f"sum r_x {r_x.sum():.6f}")
    arrays = [("x", x32), ("r_y", r_y), ("eps", eps), ("r_x", r_x)]
    for name, p in block.named_parameters():
        arrays.append(("param." + name, p.detach()))
    return write_golden(f"lrp_block{layer}", arrays, generator="tools/ref/rwkv_lrp_ref.py",
                        seed=seed, out_dir=rwkv_ref.OUT_DIR)


def main():
    model = rwkv_ref.make_model()
    print([case(model, 0, rwkv_ref.SEED + 11, 1e-2), case(model, 1, rwkv_ref.SEED + 12, 1e-2)])


if __name__ == "__main__":
    main()
