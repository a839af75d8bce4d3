"""llm_ref.py - the reference side of bench/llm.sh: transformers (float32, the GGUF dequantized
at load, as strix does), LXT 2.1's AttnLRP on it, or llama.cpp (llama-cpp-python, its own
quantized arithmetic) on the same GGUF file, measured the way bench/llm.sh measures strix: load
time, a prompt of exactly N tokens in one forward (tokens/s), M greedy new tokens one at a time
with the KV cache (tokens/s), the time to explain the next token (lxt), peak RSS. Prints one JSON
line. --engine prompt writes the N-token prompt (the first N tokens of --source, decoded) that
every engine then reads.

Needs: torch, transformers<5, gguf, accelerate (transformers, lxt, prompt); lxt 2.1 (lxt);
llama-cpp-python (llamacpp).
Usage: python llm_ref.py --engine transformers|lxt|llamacpp|prompt --model FILE.gguf
       --prompt-file F [--source TEXT] [--prompt-tokens 256] [--new 128] [--threads 2]
"""
import argparse
import json
import os
import resource
import sys
import time


def prompt_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def load_hf(a):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(a.threads)
    folder, name = os.path.split(os.path.abspath(a.model))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.float32)
    return tok, model.eval()


def write_prompt(a):
    from transformers import AutoTokenizer
    folder, name = os.path.split(os.path.abspath(a.model))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    ids = tok(prompt_text(a.source), add_special_tokens=False).input_ids[:a.prompt_tokens]
    with open(a.prompt_file, "w", encoding="utf-8") as f:
        f.write(tok.decode(ids))
    print(json.dumps({"engine": "prompt", "tokens": len(ids)}))
    sys.exit(0)


def run_lxt(a):
    """AttnLRP of the next token's logit with LXT's efficient rules (its README's recipe)."""
    import torch
    from lxt.efficient import monkey_patch
    from transformers.models.llama import modeling_llama
    monkey_patch(modeling_llama, verbose=False)
    t0 = time.perf_counter()
    tok, model = load_hf(a)
    load = time.perf_counter() - t0
    ids = tok(prompt_text(a.prompt_file), return_tensors="pt",
              add_special_tokens=False).input_ids[:, :a.prompt_tokens]
    for p in model.parameters():
        p.requires_grad_(False)
    times = []
    for _ in range(2):  # the first includes warm-up
        t0 = time.perf_counter()
        emb = model.get_input_embeddings()(ids).requires_grad_()
        logits = model(inputs_embeds=emb, use_cache=False).logits
        top = logits[0, -1].max()
        top.backward()
        (emb * emb.grad).float().sum(-1)
        times.append(time.perf_counter() - t0)
    return load, float("nan"), float("nan"), min(times)


def run_transformers(a):
    import torch
    t0 = time.perf_counter()
    tok, model = load_hf(a)
    load = time.perf_counter() - t0
    ids = tok(prompt_text(a.prompt_file), return_tensors="pt",
              add_special_tokens=False).input_ids[:, :a.prompt_tokens]
    assert ids.shape[1] == a.prompt_tokens, "prompt file too short"
    with torch.no_grad():
        model(ids[:, :8])  # warm-up
        t0 = time.perf_counter()
        out = model(ids, use_cache=True)
        prompt_s = time.perf_counter() - t0
        past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
        t0 = time.perf_counter()
        for _ in range(a.new):
            out = model(nxt, past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
        gen_s = time.perf_counter() - t0
    return load, prompt_s, gen_s, float("nan")


def run_llamacpp(a):
    from llama_cpp import Llama
    t0 = time.perf_counter()
    llm = Llama(model_path=a.model, n_ctx=a.prompt_tokens + a.new + 16, n_batch=a.prompt_tokens,
                n_threads=a.threads, n_threads_batch=a.threads, verbose=False)
    load = time.perf_counter() - t0
    toks = llm.tokenize(prompt_text(a.prompt_file).encode(), add_bos=False)[:a.prompt_tokens]
    assert len(toks) == a.prompt_tokens, "prompt file too short"
    llm.eval(toks[:8])  # warm-up
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(toks)
    prompt_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(a.new):
        nxt = llm.sample(temp=0.0)
        llm.eval([nxt])
    gen_s = time.perf_counter() - t0
    return load, prompt_s, gen_s, float("nan")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--engine", required=True, choices=["transformers", "lxt", "llamacpp", "prompt"])
    p.add_argument("--source")
    p.add_argument("--model", required=True)
    p.add_argument("--prompt-file", required=True)
    p.add_argument("--prompt-tokens", type=int, default=256)
    p.add_argument("--new", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    if a.engine == "prompt":
        write_prompt(a)
    run = {"transformers": run_transformers, "lxt": run_lxt, "llamacpp": run_llamacpp}[a.engine]
    load, prompt_s, gen_s, explain_s = run(a)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"engine": a.engine, "load_s": load,
                      "prompt_tok_s": a.prompt_tokens / prompt_s, "gen_tok_s": a.new / gen_s,
                      "explain_s": explain_s, "peak_rss_mb": rss}))


if __name__ == "__main__":
    main()
