#!/usr/bin/env python3
"""safetensors_ref.py - writes tests/golden/io/ref-f32.st, an independent reference file
for strix's safetensors reader (tests/test_checkpoint.c). It is a safetensors file; the .st
name keeps it clear of .gitignore's *.safetensors rule (meant for trained models).

The `safetensors` Python package is not installed on our machines, so the file is built by hand
with struct and json, following the format specification of huggingface/safetensors (docs
"Format" / README "Format"):
  - 8 bytes: N, little-endian unsigned 64-bit, the size of the header;
  - N bytes: a UTF-8 JSON object {"<name>": {"dtype": "F32", "shape": [...],
    "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "value"}}, padded with spaces
    (the reference writer pads to a multiple of 8 so the data is aligned);
  - the data section: tensors' little-endian bytes, [begin, end) relative to its start, covering
    it exactly without holes or overlaps.
Like the reference writer, tensors are laid out in the data section in a different order than
the JSON keys appear (here: by descending size, then name), so readers must sort by offsets.

Run from the repository root:  python3 tools/ref/safetensors_ref.py
The values are listed in tests/test_checkpoint.c (test_reads_reference_file).
"""
import json
import os
import struct

TENSORS = {
    # name: (shape, values)
    "a.weight": ([2, 3], [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]),
    "b.bias": ([4], [1.0, -2.5, 3.25, 0.001]),
    "c.scalar": ([], [42.0]),
    "d.empty": ([0, 3], []),
    "e.cube": ([2, 1, 2], [-1.0, 1e-7, 65504.0, -0.0]),
}
METADATA = {"format": "pt", "note": "hand-built reference (tools/ref/safetensors_ref.py)"}


def build():
    order = sorted(TENSORS, key=lambda n: (-len(TENSORS[n][1]), n))
    header, data, offset = {}, b"", 0
    for name in order:
        shape, values = TENSORS[name]
        blob = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        data += blob
        offset += len(blob)
    # JSON keys in name order with the metadata first, as the reference writer emits them
    ordered = {"__metadata__": METADATA}
    for name in sorted(header):
        ordered[name] = header[name]
    text = json.dumps(ordered, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    out = os.path.join("tests", "golden", "io", "ref-f32.st")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:
        f.write(build())
    print("wrote", out)


if __name__ == "__main__":
    main()
