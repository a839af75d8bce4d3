#!/usr/bin/env python3
"""PyTorch side of bench/gpt_train.sh: the same GPT as strix's config A, timed per training step.

The model is a plain nanoGPT-style transcription (learned positions, pre-norm blocks, GELU MLP 4x,
untied head without bias, AdamW with nanoGPT's decay groups, grad clipping 1.0), fp32, eager mode.
Prints one line: `torch <version> threads <n> ms/step <median> tok/s <rate> maxrss_mb <mb>`.
Written for strix; no code taken from nanoGPT.
"""
import argparse
import math
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        k = k.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        v = v.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C)
        self.attn = Attention(C, NH)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, V, block, L, NH, C):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(block, C)
        self.h = nn.ModuleList([Block(C, NH) for _ in range(L)])
        self.ln_f = nn.LayerNorm(C)
        self.lm_head = nn.Linear(C, V, bias=False)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for blk in self.h:
            x = blk(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data/tinyshakespeare.txt")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=128)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(1337)
    text = open(args.data, "rb").read()
    vocab = sorted(set(text))
    stoi = {c: i for i, c in enumerate(vocab)}
    data = torch.tensor([stoi[c] for c in text[: int(0.9 * len(text))]], dtype=torch.long)

    model = GPT(len(vocab), args.block, args.layers, args.heads, args.d_model)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)

    def batch():
        ix = torch.randint(len(data) - args.block - 1, (args.batch,))
        x = torch.stack([data[i:i + args.block] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + args.block] for i in ix])
        return x, y

    times = []
    for step in range(args.warmup_steps + args.steps):
        x, y = batch()
        t0 = time.perf_counter()
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step >= args.warmup_steps:
            times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1e3
    tok = args.batch * args.block / (ms / 1e3)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"torch {torch.__version__} threads {torch.get_num_threads()} ms/step {ms:.1f} "
          f"tok/s {tok:.0f} maxrss_mb {rss:.0f} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
