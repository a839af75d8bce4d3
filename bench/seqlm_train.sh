#!/usr/bin/env bash
# Sequence-model LM training steps and decoding, strix beside PyTorch / transformers in one run:
# the same model (embedding -> blocks -> norm -> head, ~0.8 M parameters at vocabulary 65, the
# GPT's config-A size), batch 16, block 64, AdamW, fp32, 2 threads, tinyshakespeare. Rounds
# alternate strix and the reference; the summary quotes medians and the ratio of tok/s.
# Usage: bench/seqlm_train.sh [ROUNDS] [ARCH...]   (env: BUILD=build, STEPS=10,
#        TORCH_PYTHON=python with torch and transformers, e.g. a venv's)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-2}
shift || true
ARCHS=("$@")
[ ${#ARCHS[@]} -gt 0 ] || ARCHS=(lstm gru mamba rwkv)
STEPS=${STEPS:-10}
PY=${TORCH_PYTHON:-python3}
DATA=../shared/data/tinyshakespeare.txt
# the ~0.8 M-parameter shapes (README's table uses the same)
declare -A SHAPE=(
    [rnn]="--d-model 128 --layers 2 --hidden 480"
    [lstm]="--d-model 128 --layers 2 --hidden 232"
    [gru]="--d-model 128 --layers 2 --hidden 272"
    [mamba]="--d-model 192 --layers 3 --d-state 16 --d-conv 4 --expand 2"
    [rwkv]="--d-model 128 --layers 4 --d-ff 448"
    [retnet]="--d-model 128 --layers 4 --heads 4 --d-ff 192"
)
[ -x "$BUILD/bench_seqlm" ] || { echo "build first: make build" >&2; exit 1; }
log=$(mktemp)
for ((r = 1; r <= ROUNDS; r++)); do
    for a in "${ARCHS[@]}"; do
        common="--arch $a ${SHAPE[$a]} --steps $STEPS --threads 2 --batch 16 --block 64"
        echo "round $r strix/$a: $("$BUILD/bench_seqlm" $common --data $DATA)" | tee -a "$log"
        if "$PY" -c "import torch" 2>/dev/null; then
            out=$("$PY" bench/torch_seqlm.py $common --data $DATA 2>/dev/null) || out="(no reference)"
            echo "round $r torch/$a: $out" | tee -a "$log"
        fi
    done
done
echo "== medians over $ROUNDS rounds: ms/step, tok/s, decode chars/s; strix/reference tok/s =="
python3 - "$log" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (\w+)/(\w+): .*?params (\d+) ms/step ([\d.]+) tok/s (\d+) "
                 r"decode_chars/s (\d+)", line)
    if m:
        rows.setdefault((m.group(2), m.group(1)), []).append(
            (int(m.group(3)), float(m.group(4)), int(m.group(5)), int(m.group(6))))
for (arch, side), v in sorted(rows.items()):
    ms = statistics.median(x[1] for x in v)
    tok = statistics.median(x[2] for x in v)
    dec = statistics.median(x[3] for x in v)
    ratio = ""
    if side == "strix" and (arch, "torch") in rows:
        ref = statistics.median(x[2] for x in rows[(arch, "torch")])
        ratio = f"  {tok / ref:.2f}x the reference's tok/s"
    print(f"{arch:7s} {side:6s} params {v[0][0]:8d} {ms:9.1f} ms {tok:8.0f} tok/s {dec:7.0f} "
          f"chars/s{ratio}")
PY
rm -f "$log"
