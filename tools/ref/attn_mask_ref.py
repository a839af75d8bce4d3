#!/usr/bin/python3
"""Golden file for the key-padding mask of strix's attention (tests/test_nn.c), with PyTorch.

Run from the repository root:  /usr/bin/python3 tools/ref/attn_mask_ref.py
Writes tests/golden/attn_mask/attn_masked.bin (format: tools/ref/gpt_ref.py's Golden writer).

The reference is torch's own nn.MultiheadAttention (batch_first), not a transcription: its
in_proj (3C, C) holds q|k|v rows as strix's c_attn does, head h takes columns [h·hs, (h+1)·hs),
scores are scaled by 1/sqrt(hs), out_proj is c_proj. The causal mask goes in attn_mask (True =
not allowed) and the key padding in key_padding_mask (True = ignore); strix's keep (B, T) is the
negation (1 = attend), stored as "keep". No query has all its keys masked (torch gives NaN there,
strix zeros: that case is tested without torch).
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_ref  # noqa: E402  (the Golden writer)

OUT_DIR = os.path.join("tests", "golden", "attn_mask")


def main():
    if not os.path.isdir(os.path.dirname(OUT_DIR)):
        sys.exit("run from the repository root (tests/golden not found)")
    os.makedirs(OUT_DIR, exist_ok=True)
    gpt_ref.OUT_DIR = OUT_DIR
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(20261201)
    B, T, C, NH = 2, 5, 16, 2
    mha = nn.MultiheadAttention(C, NH, bias=True, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(0.3 * torch.randn(3 * C, C, generator=gen))
        mha.in_proj_bias.copy_(0.1 * torch.randn(3 * C, generator=gen))
        mha.out_proj.weight.copy_(0.3 * torch.randn(C, C, generator=gen))
        mha.out_proj.bias.copy_(0.1 * torch.randn(C, generator=gen))
    keep = torch.tensor([[1, 1, 1, 0, 1], [1, 0, 1, 1, 0]], dtype=torch.float32)
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    x = torch.randn(B, T, C, generator=gen).requires_grad_(True)
    y, _ = mha(x, x, x, attn_mask=causal, key_padding_mask=keep == 0, need_weights=False)
    dy = torch.randn(y.shape, generator=gen)
    y.backward(dy)
    g = gpt_ref.Golden("nn.MultiheadAttention with key_padding_mask; "
                       f"B {B} T {T} C {C} NH {NH}, causal")
    g.note = g.note.replace("tools/ref/gpt_ref.py", "tools/ref/attn_mask_ref.py")
    names = {"in_proj_weight": "m.c_attn.weight", "in_proj_bias": "m.c_attn.bias",
             "out_proj.weight": "m.c_proj.weight", "out_proj.bias": "m.c_proj.bias"}
    for name, p in mha.named_parameters():
        g.f32(f"param.{names[name]}", p)
    g.f32("keep", keep)
    g.f32("x", x)
    g.f32("y", y)
    g.f32("dy", dy)
    g.f32("dx", x.grad)
    for name, p in mha.named_parameters():
        g.f32(f"grad.{names[name]}", p.grad)
    g.write("attn_masked.bin")
    print(f"torch {torch.__version__}: wrote {OUT_DIR}/attn_masked.bin")


if __name__ == "__main__":
    main()
