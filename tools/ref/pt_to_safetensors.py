#!/usr/bin/python3
"""Converts a PyTorch GPT state dict (.pt) into a strix weights-only file (safetensors).

    /usr/bin/python3 tools/ref/pt_to_safetensors.py ckpt.pt model.safetensors --meta meta.pkl
    /usr/bin/python3 tools/ref/pt_to_safetensors.py sd.pt model.safetensors --n-head 6 --vocab bytes

Input: nanoGPT's ckpt.pt (a dict with 'model', the state dict, and 'model_args': n_layer, n_head,
n_embd, block_size, bias, vocab_size) or a plain state dict with nanoGPT's names
(transformer.wte.weight, transformer.wpe.weight, transformer.h.N.ln_1/attn.c_attn/attn.c_proj/
ln_2/mlp.c_fc/mlp.c_proj .weight/.bias, transformer.ln_f, lm_head.weight). torch.compile's
'_orig_mod.' prefix and the causal-mask buffers (attn.bias, 4-D; attn.masked_bias) are dropped.
A plain state dict gives every size by its shapes except the number of heads: --n-head N.

Vocabulary (strix's tokens are bytes): --meta meta.pkl (nanoGPT's char vocabulary, itos: id ->
character; every character must be ASCII) or --vocab bytes (the identity vocabulary of 256
bytes: id i is byte i). strix keeps the vocabulary in ascending byte order; ids in another order
are renumbered by permuting the rows of wte and lm_head (the model computes the same function).

Output: the strix weights-only format (include/strix/checkpoint.h): F32 tensors by the same names
(lm_head.weight left out when it equals transformer.wte.weight, nanoGPT's tying), and
__metadata__ format "strix-gpt", format_version "1", contents "weights", config (the model as
strix's JSON: GELU (erf) MLP of 4·n_embd, LayerNorm eps 1e-5, learned positions, as nanoGPT),
vocab (hex bytes) and source. Written by hand (8-byte little-endian header length, the JSON header
padded with spaces to a multiple of 8, the raw little-endian data), so the safetensors package is
not needed, atomically (a temp file in the same folder, then rename). An existing OUT is replaced
only with --force. Exit 0, or 1 with one line "pt_to_safetensors: ..." on stderr.
"""
import argparse
import json
import os
import pickle
import re
import struct
import sys

PROG = "pt_to_safetensors"


class Refused(Exception):
    pass


def load_state(path):
    """The state dict and nanoGPT's model_args (None for a plain state dict)."""
    global torch
    import torch  # here, so that refusals of the arguments need no torch
    try:
        obj = torch.load(path, map_location="cpu")
    except Exception as e:  # a pickle of anything else, a truncated file, ...
        raise Refused(f"cannot read '{path}' as a PyTorch file: {e}")
    args = None
    if isinstance(obj, dict) and "model" in obj and isinstance(obj["model"], dict):
        args = obj.get("model_args")
        obj = obj["model"]
    if not isinstance(obj, dict) or not all(torch.is_tensor(v) for v in obj.values()):
        raise Refused(f"'{path}' holds no state dict (a dict of tensors, or nanoGPT's ckpt.pt)")
    sd = {}
    for name, t in obj.items():
        name = name[len("_orig_mod."):] if name.startswith("_orig_mod.") else name
        if re.fullmatch(r"transformer\.h\.\d+\.attn\.(bias|masked_bias)", name) and t.dim() != 1:
            continue  # the causal mask buffer, not a parameter
        sd[name] = t
    return sd, args


def config_of(sd, args, n_head):
    """strix's config from the shapes, checked against model_args where there are any."""
    if "transformer.wte.weight" not in sd:
        raise Refused("the state dict has no 'transformer.wte.weight' (not a nanoGPT-style GPT)")
    V, C = sd["transformer.wte.weight"].shape
    if "transformer.wpe.weight" not in sd:
        raise Refused("the state dict has no 'transformer.wpe.weight' (learned positions)")
    T = sd["transformer.wpe.weight"].shape[0]
    L = 1 + max([int(m.group(1)) for m in
                 (re.match(r"transformer\.h\.(\d+)\.", k) for k in sd) if m] or [-1])
    if L < 1:
        raise Refused("the state dict has no block transformer.h.0")
    bias = "transformer.ln_f.bias" in sd
    if args:
        for key, have in (("vocab_size", V), ("n_embd", C), ("block_size", T), ("n_layer", L),
                          ("bias", bias)):
            if key in args and args[key] != have:
                raise Refused(f"model_args {key} = {args[key]} but the tensors say {have}")
        if n_head is not None and args.get("n_head", n_head) != n_head:
            raise Refused(f"--n-head {n_head} but model_args n_head = {args['n_head']}")
        n_head = args.get("n_head", n_head)
    if n_head is None:
        raise Refused("a plain state dict does not say its number of heads: give --n-head N")
    if n_head < 1 or C % n_head:
        raise Refused(f"n_head {n_head} does not divide n_embd {C}")
    d_ff = sd["transformer.h.0.mlp.c_fc.weight"].shape[0] if \
        "transformer.h.0.mlp.c_fc.weight" in sd else 4 * C
    return {"vocab_size": int(V), "block_size": int(T), "n_layer": int(L), "n_head": int(n_head),
            "d_model": int(C), "head_sizes": [], "d_ff": int(d_ff), "mlp_act": "gelu",
            "rope": False, "rope_base": 10000, "tie_weights": False, "bias": bias,
            "ln_eps": 1e-05}


def expected_shapes(c):
    """Every parameter strix's GPT of config c has, with its shape (lm_head included)."""
    V, T, C, F = c["vocab_size"], c["block_size"], c["d_model"], c["d_ff"]
    shapes = {"transformer.wte.weight": (V, C), "transformer.wpe.weight": (T, C)}
    linears = {"attn.c_attn": (3 * C, C), "attn.c_proj": (C, C), "mlp.c_fc": (F, C),
               "mlp.c_proj": (C, F)}
    for l in range(c["n_layer"]):
        p = f"transformer.h.{l}."
        for ln in ("ln_1", "ln_2"):
            shapes[p + ln + ".weight"] = (C,)
            if c["bias"]:
                shapes[p + ln + ".bias"] = (C,)
        for name, shape in linears.items():
            shapes[p + name + ".weight"] = shape
            if c["bias"]:
                shapes[p + name + ".bias"] = (shape[0],)
    shapes["transformer.ln_f.weight"] = (C,)
    if c["bias"]:
        shapes["transformer.ln_f.bias"] = (C,)
    shapes["lm_head.weight"] = (V, C)
    return shapes


def vocab_of(args, V):
    """The vocabulary bytes in id order."""
    if args.vocab == "bytes":
        if V != 256:
            raise Refused(f"--vocab bytes needs a vocabulary of 256; the model has {V}")
        return list(range(256))
    try:
        with open(args.meta, "rb") as f:
            meta = pickle.load(f)
        itos = meta["itos"]
    except Exception as e:
        raise Refused(f"cannot read the vocabulary itos from '{args.meta}': {e}")
    if sorted(itos) != list(range(V)):
        raise Refused(f"'{args.meta}' has {len(itos)} ids; the model has {V} (ids 0..{V - 1})")
    out = []
    for i in range(V):
        ch = itos[i]
        if not isinstance(ch, str) or len(ch) != 1 or ord(ch) > 127:
            raise Refused(f"'{args.meta}': id {i} is {ch!r}, not one ASCII character (strix's "
                          "tokens are bytes)")
        out.append(ord(ch))
    if len(set(out)) != V:
        raise Refused(f"'{args.meta}': two ids have the same character")
    return out


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, float32 contiguous tensor); written atomically."""
    header, offset, blobs = {}, 0, []
    for name, t in tensors:
        data = t.numpy().astype("<f4", copy=False).tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)),
                       f".{os.path.basename(path)}.tmp.{os.getpid()}")
    try:
        with open(tmp, "xb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for b in blobs:
                f.write(b)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise Refused(f"cannot write '{path}': {e.strerror}")


def convert(args):
    if os.path.isdir(args.out):
        raise Refused(f"'{args.out}' is a directory")
    if os.path.exists(args.out) and not args.force:
        raise Refused(f"'{args.out}' exists; --force replaces it")
    sd, model_args = load_state(args.pt)
    c = config_of(sd, model_args, args.n_head)
    shapes = expected_shapes(c)
    if "lm_head.weight" not in sd:  # a state dict saved with the head tied and left out
        sd["lm_head.weight"] = sd["transformer.wte.weight"]
    for name in sd:
        if name not in shapes:
            raise Refused(f"unexpected tensor '{name}' (not a nanoGPT GPT of this config)")
    for name, shape in shapes.items():
        if name not in sd:
            raise Refused(f"missing tensor '{name}'")
        if tuple(sd[name].shape) != shape:
            raise Refused(f"tensor '{name}' has shape {tuple(sd[name].shape)}, expected {shape}")
    sd = {k: v.detach().to(torch.float32).contiguous() for k, v in sd.items()}
    vocab = vocab_of(args, c["vocab_size"])
    order = sorted(range(len(vocab)), key=lambda i: vocab[i])  # new id -> old id
    if order != list(range(len(vocab))):
        perm = torch.tensor(order)
        for k in ("transformer.wte.weight", "lm_head.weight"):
            sd[k] = sd[k][perm].contiguous()
        vocab = [vocab[i] for i in order]
    c["tie_weights"] = torch.equal(sd["lm_head.weight"], sd["transformer.wte.weight"])
    names = [n for n in shapes if not (c["tie_weights"] and n == "lm_head.weight")]
    meta = {"format": "strix-gpt", "format_version": "1", "contents": "weights",
            "config": json.dumps(c, separators=(",", ":")),
            "vocab": "".join(f"{b:02x}" for b in vocab),
            "source": f"tools/ref/pt_to_safetensors.py from {os.path.basename(args.pt)}"}
    write_safetensors(args.out, [(n, sd[n]) for n in names], meta)
    n_params = sum(sd[n].numel() for n in names)
    print(f"wrote {args.out}: {len(names)} tensors, {n_params} parameters; {c['n_layer']} layers, "
          f"{c['n_head']} heads, d_model {c['d_model']}, block {c['block_size']}, vocabulary "
          f"{c['vocab_size']}, bias {'on' if c['bias'] else 'off'}, "
          f"{'tied' if c['tie_weights'] else 'untied'} head")


def main():
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("pt", help="nanoGPT ckpt.pt or a plain state dict (.pt)")
    p.add_argument("out", help="strix weights-only file to write (.safetensors)")
    v = p.add_mutually_exclusive_group(required=True)
    v.add_argument("--meta", help="nanoGPT's meta.pkl (itos: the character of each id)")
    v.add_argument("--vocab", choices=["bytes"], help="bytes: the 256 byte values as ids")
    p.add_argument("--n-head", type=int, help="heads (required for a plain state dict)")
    p.add_argument("--force", action="store_true", help="replace an existing OUT")
    args = p.parse_args()
    try:
        convert(args)
    except Refused as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
