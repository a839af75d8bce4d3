#!/usr/bin/python3
"""Golden files for tests/test_gpt.c and tests/test_nn.c, written with PyTorch (Debian's 1.13).

Run from the repository root:  /usr/bin/python3 tools/ref/gpt_ref.py
Writes tests/golden/gpt/*.bin. Every file's note records the torch version and the configuration.

The model below is an independent nanoGPT-style transcription written for strix (no code copied):
token + learned position embeddings (or RoPE on q,k per head, adjacent pairs (2i, 2i+1),
theta_i = pos / base^(2i/hs)), pre-norm blocks, causal multi-head attention with uniform or
heterogeneous head sizes (head h owns columns [off_h, off_h+hs_h) of q, k and v), MLP with
GELU (erf) or ReLU, final LayerNorm, lm_head without bias, optionally tied to wte.
Weights are random (seeded) rather than nanoGPT's tiny init, so every path carries signal.

File format: the one tests/testlib.h reads (and tools/ref/ops_ref.py writes), little-endian:
  8 bytes "STRXGLD1"; u32 note length + note (generator, torch version, config); u32 array count;
  per array: u32 name length + name, u32 ndim, i64 shape[ndim], f32 data. Integer arrays (ids,
  targets, config sizes) are stored as exact floats.
"""
import math
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT_DIR = os.path.join("tests", "golden", "gpt")


# ---- golden writer ------------------------------------------------------------------------------

class Golden:
    def __init__(self, note=""):
        self.note = f"tools/ref/gpt_ref.py; torch {torch.__version__}" + (f"; {note}" if note else "")
        self.arrays = []

    def f32(self, name, t):
        assert len(name) < 64, name  # tl_array.name is 64 bytes
        t = t.detach().to(torch.float32).contiguous()
        self.arrays.append((name, list(t.shape), t.numpy().tobytes()))

    def i32(self, name, t):
        t = t.detach()
        assert t.abs().max().item() < 2 ** 24  # exact as float
        self.f32(name, t.to(torch.float32))

    def write(self, fname):
        path = os.path.join(OUT_DIR, fname)
        note = self.note.encode("utf-8")
        with open(path, "wb") as f:
            f.write(b"STRXGLD1")
            f.write(struct.pack("<I", len(note)))
            f.write(note)
            f.write(struct.pack("<I", len(self.arrays)))
            for name, shape, data in self.arrays:
                nb = name.encode("utf-8")
                f.write(struct.pack("<I", len(nb)))
                f.write(nb)
                f.write(struct.pack("<I", len(shape)))
                f.write(struct.pack(f"<{len(shape)}q", *shape))
                f.write(data)
        print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(self.arrays)} arrays)")


# ---- the model ----------------------------------------------------------------------------------

def rope_tables(block_size, hs, base):
    """cos/sin of shape (block_size, hs/2), computed in float64 then rounded to float32."""
    i = torch.arange(hs // 2, dtype=torch.float64)
    inv_freq = 1.0 / torch.pow(torch.tensor(base, dtype=torch.float64), 2.0 * i / hs)
    pos = torch.arange(block_size, dtype=torch.float64)
    ang = pos[:, None] * inv_freq[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def rope_apply(x, cos, sin):
    """x (B,T,hs): rotate adjacent pairs (2i, 2i+1) by the angle of each position."""
    T = x.shape[1]
    c, s = cos[:T], sin[:T]
    lo, hi = x[..., 0::2], x[..., 1::2]
    out_lo = lo * c - hi * s
    out_hi = lo * s + hi * c
    return torch.stack((out_lo, out_hi), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, C, head_sizes, block_size, bias, rope, rope_base):
        super().__init__()
        assert sum(head_sizes) == C
        self.C = C
        self.head_sizes = list(head_sizes)
        self.c_attn = nn.Linear(C, 3 * C, bias=bias)
        self.c_proj = nn.Linear(C, C, bias=bias)
        self.rope = rope
        if rope:
            self.tables = [rope_tables(block_size, hs, rope_base) for hs in self.head_sizes]

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        outs = []
        off = 0
        for h, hs in enumerate(self.head_sizes):
            qh, kh, vh = q[..., off:off + hs], k[..., off:off + hs], v[..., off:off + hs]
            if self.rope:
                cos, sin = self.tables[h]
                qh, kh = rope_apply(qh, cos, sin), rope_apply(kh, cos, sin)
            att = (qh @ kh.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            att = att.masked_fill(~mask, float("-inf"))
            att = F.softmax(att, dim=-1)
            outs.append(att @ vh)
            off += hs
        y = torch.cat(outs, dim=-1)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, C, d_ff, act, bias):
        super().__init__()
        self.c_fc = nn.Linear(C, d_ff, bias=bias)
        self.c_proj = nn.Linear(d_ff, C, bias=bias)
        self.act = act

    def forward(self, x):
        h = self.c_fc(x)
        h = F.gelu(h) if self.act == "gelu" else F.relu(h)
        return self.c_proj(h)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["C"]
        self.ln_1 = nn.LayerNorm(C, eps=cfg["eps"], elementwise_affine=True)
        if not cfg["bias"]:
            self.ln_1.bias = None
        self.attn = Attention(C, cfg["heads"], cfg["block"], cfg["bias"], cfg["rope"],
                              cfg["rope_base"])
        self.ln_2 = nn.LayerNorm(C, eps=cfg["eps"])
        if not cfg["bias"]:
            self.ln_2.bias = None
        self.mlp = MLP(C, cfg["d_ff"], cfg["act"], cfg["bias"])

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["C"]
        self.cfg = cfg
        mods = dict(wte=nn.Embedding(cfg["V"], C))
        if not cfg["rope"]:
            mods["wpe"] = nn.Embedding(cfg["block"], C)
        mods["h"] = nn.ModuleList([Block(cfg) for _ in range(cfg["L"])])
        mods["ln_f"] = nn.LayerNorm(C, eps=cfg["eps"])
        self.transformer = nn.ModuleDict(mods)
        if not cfg["bias"]:
            self.transformer.ln_f.bias = None
        self.lm_head = nn.Linear(C, cfg["V"], bias=False)
        if cfg["tie"]:
            self.transformer.wte.weight = self.lm_head.weight

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.transformer.wte(idx)
        if not self.cfg["rope"]:
            x = x + self.transformer.wpe(torch.arange(T))
        for blk in self.transformer.h:
            x = blk(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                               ignore_index=-1)
        return logits, loss


# ---- helpers ------------------------------------------------------------------------------------

def randomize(module, gen, wstd=0.3, bstd=0.1):
    """Random weights by name: LayerNorm weights 1 + N(0, 0.1), other 1-D tensors N(0, bstd),
    2-D tensors N(0, wstd)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 1 and ("ln_" in name or name.startswith("ln") or "norm" in name):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 1:
                p.copy_(bstd * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(wstd * torch.randn(p.shape, generator=gen))


def module_golden(fname, module, prefix, x, gen):
    """Input, output, upstream grad, input grad and parameter grads of one module."""
    g = Golden(f"module {type(module).__name__}")
    for name, p in module.named_parameters():
        g.f32(f"param.{prefix}.{name}", p)
    x = x.clone().requires_grad_(True)
    y = module(x)
    dy = torch.randn(y.shape, generator=gen)
    y.backward(dy)
    g.f32("x", x)
    g.f32("y", y)
    g.f32("dy", dy)
    g.f32("dx", x.grad)
    for name, p in module.named_parameters():
        g.f32(f"grad.{prefix}.{name}", p.grad)
    g.write(fname)


def gpt_golden(fname, cfg, B, T, seed):
    gen = torch.Generator().manual_seed(seed)
    model = GPT(cfg)
    randomize(model, gen)
    g = Golden(f"config {cfg}; B {B} T {T} seed {seed}")
    for k in ("V", "block", "L", "C", "d_ff"):
        g.i32("cfg." + k, torch.tensor([cfg[k]]))
    g.i32("cfg.heads", torch.tensor(cfg["heads"]))
    # every state-dict name (tied weights appear under both names)
    for name, t in model.state_dict().items():
        g.f32("param." + name, t)
    idx = torch.randint(0, cfg["V"], (B, T), generator=gen)
    targets = torch.randint(0, cfg["V"], (B, T), generator=gen)
    g.i32("ids", idx)
    g.i32("targets", targets)

    logits, loss = model(idx, targets)
    loss.backward()
    g.f32("logits", logits)
    g.f32("loss", loss.reshape(1))
    for name, p in model.named_parameters():  # deduplicated: a tied weight once, summed grad
        g.f32("grad." + name, p.grad)

    # 10 AdamW steps with nanoGPT's groups: 2-D parameters decay, the rest do not
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    losses = []
    for step in range(11):
        opt.zero_grad(set_to_none=True)
        _, loss = model(idx, targets)
        losses.append(loss.item())
        if step == 10:
            break
        loss.backward()
        opt.step()
    g.f32("adamw_losses", torch.tensor(losses))
    g.write(fname)


def main():
    if not os.path.isdir(os.path.dirname(OUT_DIR)):
        sys.exit("run from the repository root (tests/golden not found)")
    os.makedirs(OUT_DIR, exist_ok=True)
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}")

    base = dict(V=11, block=8, L=2, C=16, heads=[8, 8], d_ff=64, act="gelu", rope=False,
                rope_base=10000.0, tie=False, bias=True, eps=1e-5)
    gpt_golden("gpt_a.bin", base, B=2, T=8, seed=1)
    hetero = dict(base, heads=[4, 12], d_ff=24, act="relu", rope=True, tie=True, bias=False)
    gpt_golden("gpt_b.bin", hetero, B=2, T=8, seed=2)

    gen = torch.Generator().manual_seed(3)
    lin = nn.Linear(5, 7)
    randomize(lin, gen)
    module_golden("linear.bin", lin, "m", torch.randn(3, 4, 5, generator=gen), gen)

    ln = nn.LayerNorm(16, eps=1e-5)
    with torch.no_grad():
        ln.weight.copy_(1.0 + 0.1 * torch.randn(16, generator=gen))
        ln.bias.copy_(0.1 * torch.randn(16, generator=gen))
    module_golden("layernorm.bin", ln, "m", 2.0 * torch.randn(2, 3, 16, generator=gen) + 0.5,
                  gen)

    att = Attention(16, [8, 8], 8, True, False, 10000.0)
    randomize(att, gen)
    module_golden("attn_uniform.bin", att, "m", torch.randn(2, 5, 16, generator=gen), gen)

    att = Attention(16, [4, 12], 8, True, True, 10000.0)
    randomize(att, gen)
    module_golden("attn_hetero_rope.bin", att, "m", torch.randn(2, 6, 16, generator=gen), gen)

    for act in ("gelu", "relu"):
        mlp = MLP(16, 24, act, True)
        randomize(mlp, gen)
        module_golden(f"mlp_{act}.bin", mlp, "m", torch.randn(2, 5, 16, generator=gen), gen)

    blk = Block(dict(base, heads=[4, 4, 4, 4], d_ff=32))
    randomize(blk, gen)
    module_golden("block.bin", blk, "m", torch.randn(2, 7, 16, generator=gen), gen)


if __name__ == "__main__":
    main()
