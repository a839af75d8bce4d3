#!/work/venv/bin/python
"""retnet_ref.py - torchscale goldens of the RetNet block and decoder (strix/retnet.h) for
tests/test_retnet.c.

Run from the repository root with the torchscale venv:
    /work/venv/bin/python tools/ref/retnet_ref.py
It writes tests/golden/retnet/<case>.bin (format: tools/ref/ops_ref.py's write_golden) and
tests/golden/retnet/lm_torch.st, the state dict of the lm case's RetNetDecoder (layers_ref.py's
writer; it holds torchscale's buffers retnet_rel_pos.angle and retnet_rel_pos.decay too).

torchscale's RetNetDecoder (torchscale.architecture.retnet) with a tiny RetNetConfig: d_model 8,
2 retention heads (key dim 4), decoder_value_embed_dim 16 (value head dim 8), ffn 16 (GLU with
GELU, the installed default), 2 layers, layernorm_eps 1e-6, no dropout, vocabulary 11, float32 on
the CPU. torch.manual_seed(SEED) before the decoder is built, so the weights are torchscale's own
init (reset_parameters: xavier_uniform, gain 2^-2.5 for q/k/v/g, 1 for out_proj; nn.Linear's
default for the GLU; output_projection N(0, d^-0.5)); the embedding is N(0, 1) (nn.Embedding).
Then q_proj, k_proj and v_proj are multiplied by WEIGHT_SCALE (8) and the RMSNorm weights set
to 1 + N(0, 0.3²) (so their gradients are tested): the tiny init makes the retention outputs so
small that RMSNorm's eps (1e-6) is not negligible beside mean(o²), and torchscale's three forms
differ by more than rounding there (they scale each row of the retention by different detached
scalars, which the group norm cancels only up to its eps); the goldens need all three to agree.

Cases (B 2, T 7):
  block_<form>    layer 0 (DecoderLayer) on a random x (B,T,C) for form parallel, recurrent (T
                  steps with incremental_state, torchscale's decoding) and chunkwise
                  (chunkwise_recurrent with recurrent_chunk_size 3; x zero-padded to 9 steps, as
                  the decoder pads, the padding's outputs dropped): x, dy, y, dx and
                  "param.<name>" / "grad.<name>" for the layer's parameters under the layer's
                  own names (retention.q_proj.weight, ...; strix declares them under a prefix).
  lm              the whole decoder as a character LM on ids (B,T) with next-token targets:
                  ids, targets, logits (B,T,V), loss (mean cross-entropy), "param.<name>" and
                  "grad.<name>" for every parameter under the decoder's names
                  (embed_tokens.weight, layers.0.retention.q_proj.weight, ..., layer_norm.weight,
                  output_projection.weight); also logits_recurrent and logits_chunkwise.
The script prints the largest difference between torchscale's three forms. It does not test
strix and is not needed to run the tests.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden, randn  # noqa: E402
from layers_ref import save_state_dict  # noqa: E402

from torchscale.architecture.config import RetNetConfig  # noqa: E402
from torchscale.architecture.retnet import RetNetDecoder  # noqa: E402

OUT_DIR = os.path.join("tests", "golden", "retnet")
GEN = "tools/ref/retnet_ref.py (torchscale)"
SEED = 2025
B, T, C, H, VD, FFN, L, V, CHUNK = 2, 7, 8, 2, 16, 16, 2, 11, 3
WEIGHT_SCALE = 8.0


def build():
    torch.manual_seed(SEED)
    args = RetNetConfig(decoder_embed_dim=C, decoder_value_embed_dim=VD,
                        decoder_retention_heads=H, decoder_ffn_embed_dim=FFN, decoder_layers=L,
                        vocab_size=V, dropout=0.0, layernorm_eps=1e-6,
                        recurrent_chunk_size=CHUNK)
    emb = nn.Embedding(V, C)
    dec = RetNetDecoder(args, embed_tokens=emb)
    with torch.no_grad():
        for name, p in dec.named_parameters():
            if any(k in name for k in ("q_proj", "k_proj", "v_proj")):
                p.mul_(WEIGHT_SCALE)
            elif name.endswith("layer_norm.weight"):  # ones at init: values the grads show
                p.copy_(1.0 + 0.3 * torch.randn(p.shape))
    return args, dec


def layer_forward(dec, layer, x, form):
    """Layer 0 of dec on x (B,T,C) in torchscale's form."""
    rp = dec.retnet_rel_pos
    if form == "parallel":
        return layer(x, retention_rel_pos=rp(x.shape[1]))[0]
    if form == "chunkwise":
        pad = (-x.shape[1]) % CHUNK
        xp = F.pad(x, (0, 0, 0, pad))
        y = layer(xp, chunkwise_recurrent=True,
                  retention_rel_pos=rp(xp.shape[1], chunkwise_recurrent=True))[0]
        return y[:, :x.shape[1]]
    state, ys = {}, []
    for t in range(x.shape[1]):
        ys.append(layer(x[:, t:t + 1], incremental_state=state,
                        retention_rel_pos=rp(t + 1, activate_recurrent=True))[0])
    return torch.cat(ys, dim=1)


def block_cases(dec):
    layer = dec.layers[0]
    torch.manual_seed(SEED + 1)
    x = randn(B, T, C)
    dy = randn(B, T, C)
    ys = {}
    for form in ("parallel", "recurrent", "chunkwise"):
        layer.zero_grad()
        xg = x.clone().requires_grad_(True)
        y = layer_forward(dec, layer, xg, form)
        (y * dy).sum().backward()
        ys[form] = y.detach()
        arrays = [("x", x), ("dy", dy), ("y", y), ("dx", xg.grad)]
        for name, p in layer.named_parameters():
            arrays += [("param." + name, p.detach()), ("grad." + name, p.grad)]
        write_golden("block_" + form, arrays, generator=GEN, seed=SEED, out_dir=OUT_DIR)
    for form in ("recurrent", "chunkwise"):
        d = (ys[form] - ys["parallel"]).abs().max().item()
        print(f"block: torchscale {form} vs parallel max |diff| {d:.3g}")


def lm_case(dec):
    torch.manual_seed(SEED + 2)
    ids = torch.randint(0, V, (B, T + 1))
    inp, tgt = ids[:, :T], ids[:, 1:]
    dec.zero_grad()
    logits = dec(inp)[0]
    loss = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))
    loss.backward()
    arrays = [("ids", inp), ("targets", tgt), ("logits", logits), ("loss", loss)]
    for name, p in dec.named_parameters():
        arrays += [("param." + name, p.detach()), ("grad." + name, p.grad)]
    with torch.no_grad():
        dec.chunkwise_recurrent = True
        lc = dec(inp)[0]
        dec.chunkwise_recurrent = False
        state, steps = {}, []
        for t in range(T):
            steps.append(dec(inp[:, :t + 1], incremental_state=state)[0][:, -1:])
        lr = torch.cat(steps, dim=1)
    print(f"lm: loss {loss.item():.6f}; recurrent vs parallel {(lr - logits).abs().max():.3g}, "
          f"chunkwise vs parallel {(lc - logits).abs().max():.3g}")
    arrays += [("logits_recurrent", lr), ("logits_chunkwise", lc)]
    write_golden("lm", arrays, generator=GEN, seed=SEED, out_dir=OUT_DIR)
    save_state_dict(dec, os.path.join(OUT_DIR, "lm_torch.st"))


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    _, dec = build()
    print("decay", dec.retnet_rel_pos.decay.exp().tolist(), "angle",
          dec.retnet_rel_pos.angle.tolist())
    block_cases(dec)
    lm_case(dec)


if __name__ == "__main__":
    main()
