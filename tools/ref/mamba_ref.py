#!/usr/bin/python3
"""mamba_ref.py - transformers' goldens of the Mamba block (strix/mamba.h) for tests/test_mamba.c.

Run from the repository root with the venv that holds torch 1.13 and transformers 4.40.2:
    /work/venv/bin/python tools/ref/mamba_ref.py
It writes into tests/golden/mamba/ (format: tools/ref/ops_ref.py's write_golden):
  block.bin   each of the two MambaBlocks of the model on its own: for layer i, "layers.<i>.x"
              (B,T,C) random, "layers.<i>.dy" random upstream gradient, "layers.<i>.y" the block
              output, "layers.<i>.dx" the input gradient; every parameter as "param.<name>" and
              its gradient summed over both block calls as "grad.<name>" (names as
              MambaForCausalLM's state dict, backbone.layers.<i>.…);
  model.bin   the whole MambaForCausalLM: "ids" (B,T) and "targets" (B,T) as exact floats,
              "logits" (B,T,V), "loss" (mean cross-entropy of logits against targets, no shift),
              "param.<name>" and "grad.<name>" of every parameter (the head is tied to
              backbone.embeddings.weight: its gradient is the sum of both uses);
  model.st    model.state_dict() as safetensors (layers_ref.py's writer; lm_head.weight included,
              as torch saves it).
The model is MambaForCausalLM(vocab 11, hidden 8, state 4, conv 3, expand 2, 2 layers, dt_rank
'auto' = 1) from transformers' own init (_init_weights: dt bias = inverse softplus of dt, A_log =
log(1..N), D = 1), then every parameter is perturbed by N(0, 0.1²) so no gradient is degenerate.
B = 2, T = 7, float32 on the CPU: the pure-PyTorch path (MambaMixer.slow_forward).
The LRP goldens are tools/ref/mamba_lrp_ref.py's. This script does not test strix.
"""
import os
import sys

import torch
from transformers import MambaConfig, MambaForCausalLM

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden  # noqa: E402
from layers_ref import save_state_dict  # noqa: E402

OUT_DIR = os.path.join("tests", "golden", "mamba")
SEED = 12
B, T = 2, 7


def build_model():
    torch.manual_seed(SEED)
    cfg = MambaConfig(vocab_size=11, hidden_size=8, state_size=4, num_hidden_layers=2,
                      conv_kernel=3, expand=2, use_bias=False, use_conv_bias=True,
                      layer_norm_epsilon=1e-5, tie_word_embeddings=True)
    model = MambaForCausalLM(cfg).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.add_(0.1 * torch.randn(p.shape))
    return cfg, model


def params(model, arrays, with_grad):
    for name, p in model.named_parameters():
        arrays.append(("param." + name, p.detach()))
        if with_grad:
            arrays.append(("grad." + name, p.grad.detach() if p.grad is not None
                           else torch.zeros_like(p)))


def block_case(model):
    model.zero_grad()
    arrays = []
    C = model.config.hidden_size
    for i, block in enumerate(model.backbone.layers):
        x = torch.randn(B, T, C).requires_grad_(True)
        y = block(x)
        dy = torch.randn(B, T, C)
        y.backward(dy)
        arrays += [(f"layers.{i}.x", x.detach()), (f"layers.{i}.dy", dy),
                   (f"layers.{i}.y", y.detach()), (f"layers.{i}.dx", x.grad.detach())]
    for name, p in model.named_parameters():
        if name.startswith("backbone.layers."):
            arrays.append(("param." + name, p.detach()))
            arrays.append(("grad." + name, p.grad.detach()))
    write_golden("block", arrays, generator="tools/ref/mamba_ref.py", seed=SEED, out_dir=OUT_DIR)


def model_case(model):
    model.zero_grad()
    V = model.config.vocab_size
    ids = torch.randint(0, V, (B, T))
    targets = torch.randint(0, V, (B, T))
    logits = model(input_ids=ids).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
    loss.backward()
    arrays = [("ids", ids.float()), ("targets", targets.float()), ("logits", logits.detach()),
              ("loss", loss.detach())]
    params(model, arrays, True)
    write_golden("model", arrays, generator="tools/ref/mamba_ref.py", seed=SEED, out_dir=OUT_DIR)
    save_state_dict(model, os.path.join(OUT_DIR, "model.st"))


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    _, model = build_model()
    block_case(model)
    model_case(model)


if __name__ == "__main__":
    main()
