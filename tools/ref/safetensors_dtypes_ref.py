#!/usr/bin/env python3
"""safetensors_dtypes_ref.py - writes the reference files of strix's typed and sharded safetensors
reading (tests/test_safetensors.c):

  tests/golden/io/dtypes.st        F16, BF16, I32, U8 and I64 tensors with torch's float32 values
  tests/golden/io/sharded/         a set of two shards and its model.safetensors.index.json

The values come from PyTorch (Debian's python3-torch): torch's .half() and .bfloat16() round a
float32 to nearest, ties to even, and .float() converts back exactly; int tensors' .float() gives
the nearest float. The `safetensors` package is not installed, so the bytes are laid out by hand
with struct and json, following huggingface/safetensors (docs "Format"): 8 bytes of little-endian
header length N, N bytes of JSON {"<name>": {"dtype", "shape", "data_offsets": [begin, end]},
"__metadata__": {...}} padded with spaces, then the data section. The index follows transformers'
sharded checkpoints: {"metadata": {"total_size": <bytes of tensor data>}, "weight_map":
{"<tensor>": "<shard file>"}}.

In dtypes.st, for each dtype d:
  "<d>"      the tensor in dtype d (the bytes torch holds),
  "<d>.f32"  the same values as float32 (torch's .to(float32)): what strix must read,
  "<d>.src"  (f16, bf16) the float32 values before rounding: what strix's writer must round to
             exactly the bytes of "<d>".
The data section is laid out in the order of TENSORS below, so some F32 tensors start at offsets
that are not multiples of 4 (after the 6-byte u8 tensor): the reader must not read them in place.
The .st names keep the files clear of .gitignore's *.safetensors rule.

Run from the repository root:  /usr/bin/python3 tools/ref/safetensors_dtypes_ref.py
"""
import json
import os
import struct

import torch

DTYPE_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
               torch.int32: "I32", torch.uint8: "U8", torch.int64: "I64"}

F16_SRC = [1.0, -2.5, 65504.0, 2.0 ** -24, 0.1, -0.0, float("inf"), float("nan"),
           1.0 + 2.0 ** -11,            # a tie: to even (1.0)
           1.0 + 3 * 2.0 ** -11,        # a tie: to even (1 + 2^-9)
           65520.0,                     # a tie between 65504 and 65536: to even, inf
           1e6, -1e-9,                  # overflow to inf, underflow to -0
           2.0 ** -25,                  # a subnormal tie: to 0
           3 * 2.0 ** -25,              # a subnormal tie: to 2^-23
           6.1e-5]                      # just under the smallest normal half
BF16_SRC = [1.0, -1.5, 3.0e38, 1e-40, 0.1, 1.0 / 3.0, float("-inf"),
            1.0 + 2.0 ** -8,             # a tie: to even (1.0)
            1.0 + 3 * 2.0 ** -8,         # a tie: to even (1 + 2^-6)
            3.4e38]                      # rounds past the largest bfloat16: inf
I32_VALUES = [0, -1, 2 ** 31 - 1, -2 ** 31, 2 ** 24 + 1, 123]   # 2^24+1 -> 2^24 (to even)
U8_VALUES = [0, 1, 127, 128, 254, 255]
I64_VALUES = [0, -3, 2 ** 53 + 1, 2 ** 24 + 3, -2 ** 62, 2 ** 63 - 1]  # 2^24+3 -> 2^24+4


def f32(values, shape=None):
    t = torch.tensor(values, dtype=torch.float32)
    return t.reshape(shape) if shape else t


def tensors():
    f16_src = f32(F16_SRC, [4, 4])
    bf16_src = f32(BF16_SRC, [2, 5])
    i32 = torch.tensor(I32_VALUES, dtype=torch.int32).reshape(2, 3)
    u8 = torch.tensor(U8_VALUES, dtype=torch.uint8).reshape(2, 3)
    i64 = torch.tensor(I64_VALUES, dtype=torch.int64)
    f16, bf16 = f16_src.half(), bf16_src.bfloat16()
    return [  # in data-section order
        ("u8", u8), ("u8.f32", u8.float()),                       # u8.f32 at offset 6
        ("f16", f16), ("f16.f32", f16.float()), ("f16.src", f16_src),
        ("bf16", bf16), ("bf16.f32", bf16.float()), ("bf16.src", bf16_src),
        ("i32", i32), ("i32.f32", i32.float()),
        ("i64", i64), ("i64.f32", i64.float()),
        ("scalar.f16", torch.tensor(-0.5).half()),                # 0-dim
    ]


def raw_bytes(t):
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as int16
        t = t.view(torch.int16)
    return t.contiguous().numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()


def safetensors_bytes(items, metadata):
    header, data = {}, b""
    for name, t in items:
        blob = raw_bytes(t)
        header[name] = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    ordered = {"__metadata__": metadata}
    for name in sorted(header):
        ordered[name] = header[name]
    text = json.dumps(ordered, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data, len(data)


def write(path, blob):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(blob)
    print("wrote", path, len(blob), "bytes")


def main():
    blob, _ = safetensors_bytes(tensors(), {"format": "pt",
                                            "source": "tools/ref/safetensors_dtypes_ref.py"})
    write(os.path.join("tests", "golden", "io", "dtypes.st"), blob)

    shards = {
        "model-00001-of-00002.st": [
            ("embed.weight", f32([0.5, -1.0, 2.0, 0.25, 8.0, -0.125], [3, 2])),
            ("layers.0.weight", f32([1.0, 0.1, -3.0, 1e-3], [2, 2]).bfloat16()),
        ],
        "model-00002-of-00002.st": [
            ("layers.1.weight", f32([0.3, -0.7, 1.5, 2048.5], [2, 2]).half()),
            ("lm_head.weight", f32([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])),
            ("step", torch.tensor(7, dtype=torch.int64)),
        ],
    }
    weight_map, total = {}, 0
    for file, items in shards.items():
        blob, size = safetensors_bytes(items, {"format": "pt"})
        total += size
        write(os.path.join("tests", "golden", "io", "sharded", file), blob)
        for name, _ in items:
            weight_map[name] = file
    index = {"metadata": {"total_size": total, "note": "two shards"},
             "weight_map": dict(sorted(weight_map.items()))}
    text = json.dumps(index, indent=2) + "\n"
    write(os.path.join("tests", "golden", "io", "sharded", "model.safetensors.index.json"),
          text.encode("utf-8"))


if __name__ == "__main__":
    main()
