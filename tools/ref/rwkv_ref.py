#!/work/venv/bin/python
"""rwkv_ref.py - transformers goldens of the RWKV-4 block (strix/rwkv.h) for tests/test_rwkv.c.

Run from the repository root with the venv that has transformers 4.40 (torch 1.13, CPU):
    /work/venv/bin/python tools/ref/rwkv_ref.py
It writes into tests/golden/rwkv/ (format: tools/ref/ops_ref.py's write_golden):
  block0.bin, block1.bin  one RwkvBlock of a tiny RwkvForCausalLM (layer 0 has pre_ln, layer 1
                          not): x (B,T,C), dy, y = block(x), dx, and "param.<name>" /
                          "grad.<name>" for every parameter under the block's own names
                          (strix declares them with an empty prefix); loss = Σ y·dy;
  model.bin               the whole model on ids (B,T) with labels = ids: ids, logits, loss
                          (transformers' shifted mean cross-entropy) and "grad.<name>" of every
                          parameter under RwkvForCausalLM's names, and "init.<name>" of the
                          time_* vectors as RwkvPreTrainedModel._init_weights set them; ids2
                          (B,3) and logits2, the logits of ids2 continued from the state that
                          ids left (use_cache=True, transformers' `state` list);
  model.st                the model's state dict (safetensors, layers_ref.py's writer).
The model is RwkvForCausalLM(vocab 11, hidden 8, 2 layers, intermediate 16, rescale_every 0) in
train() mode (no rescaling), float32, CPU: the pure-PyTorch path rwkv_linear_attention_cpu.
After transformers' init the time_* vectors and LayerNorms are randomised too, so every
parameter matters. This script does not test strix and is not needed to run the tests.
"""
import os
import sys

import torch
from transformers import RwkvConfig, RwkvForCausalLM

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden  # noqa: E402
from layers_ref import save_state_dict  # noqa: E402

OUT_DIR = os.path.join("tests", "golden", "rwkv")
SEED = 2025
VOCAB, C, LAYERS, INTER, B, T = 11, 8, 2, 16, 2, 7


def make_model():
    torch.manual_seed(SEED)
    cfg = RwkvConfig(vocab_size=VOCAB, hidden_size=C, num_hidden_layers=LAYERS,
                     intermediate_size=INTER, attention_hidden_size=C, context_length=32,
                     rescale_every=0, layer_norm_epsilon=1e-5)
    model = RwkvForCausalLM(cfg).float()
    model.train()
    model.init_values = {name: p.detach().clone() for name, p in model.named_parameters()
                         if "time_" in name}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("time_decay"):
                p.copy_(torch.empty_like(p).uniform_(-1.5, 1.0))
            elif name.endswith("time_first"):
                p.copy_(torch.randn_like(p) * 0.5)
            elif "time_mix" in name:
                p.copy_(torch.rand_like(p) * 0.8 + 0.1)
            elif ("ln" in name.split(".")[-2]) and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif ("ln" in name.split(".")[-2]) and name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
    return model


def block_case(model, layer, seed):
    torch.manual_seed(seed)
    block = model.rwkv.blocks[layer]
    x = torch.randn(B, T, C).requires_grad_(True)
    dy = torch.randn(B, T, C)
    block.zero_grad()
    y = block(x)[0]
    (y * dy).sum().backward()
    arrays = [("x", x.detach()), ("dy", dy), ("y", y.detach()), ("dx", x.grad)]
    for name, p in block.named_parameters():
        arrays += [("param." + name, p.detach()), ("grad." + name, p.grad)]
    return write_golden(f"block{layer}", arrays, generator="tools/ref/rwkv_ref.py", seed=seed,
                        out_dir=OUT_DIR)


def model_case(model, seed):
    torch.manual_seed(seed)
    ids = torch.randint(0, VOCAB, (B, T))
    model.zero_grad()
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    arrays = [("ids", ids.float()), ("logits", out.logits.detach()), ("loss", out.loss.detach())]
    for name, p in model.named_parameters():
        arrays.append(("grad." + name, p.grad))
    for name, v in model.init_values.items():
        arrays.append(("init." + name, v))
    # decoding: the state after ids, then 3 more tokens continued from it
    ids2 = torch.randint(0, VOCAB, (B, 3))
    with torch.no_grad():
        state = model(input_ids=ids, use_cache=True).state
        logits2 = model(input_ids=ids2, state=state, use_cache=True).logits
    arrays += [("ids2", ids2.float()), ("logits2", logits2)]
    n = write_golden("model", arrays, generator="tools/ref/rwkv_ref.py", seed=seed,
                     out_dir=OUT_DIR)
    save_state_dict(model, os.path.join(OUT_DIR, "model.st"))
    return n


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    model = make_model()
    sizes = [block_case(model, 0, SEED + 1), block_case(model, 1, SEED + 2),
             model_case(model, SEED + 3)]
    print("wrote", OUT_DIR, sizes, "bytes")


if __name__ == "__main__":
    main()
