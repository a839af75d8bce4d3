#!/usr/bin/env bash
# The README's architecture table: each --arch trained by the strix command on tinyshakespeare
# at about the same parameter count (~0.8 M, config A's size) for the same wall-clock budget
# (default 180 s, 2 threads), then sampled. A 20-second pilot measures each model's speed, so
# that --steps (the cosine schedule's horizon) ends near the budget; --time stops it at the
# budget in any case. Prints one markdown row per architecture: parameters, steps, val loss
# (50 batches), training tokens/s, sampling characters/s (2000 characters, --window slide for the
# GPT). Figures, never a test.
# Usage: bench/arch_table.sh [SECONDS] [ARCH...]   (env: BUILD=build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BUDGET=${1:-180}
PILOT=${PILOT:-20}
shift || true
ARCHS=("$@")
[ ${#ARCHS[@]} -gt 0 ] || ARCHS=(gpt rnn lstm gru mamba rwkv retnet)
STRIX=$(realpath "$BUILD/strix")
DATA=$(realpath ../shared/data/tinyshakespeare.txt)
declare -A SHAPE=(
    [gpt]="--d-model 128 --layers 4 --heads 4"
    [rnn]="--d-model 128 --layers 2 --hidden 480"
    [lstm]="--d-model 128 --layers 2 --hidden 232"
    [gru]="--d-model 128 --layers 2 --hidden 272"
    [mamba]="--d-model 192 --layers 3"
    [rwkv]="--d-model 128 --layers 4 --d-ff 448"
    [retnet]="--d-model 128 --layers 4 --heads 4 --d-ff 192"
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "| arch | parameters | steps | val loss | train tokens/s | sample chars/s |"
echo "|---|---|---|---|---|---|"
for a in "${ARCHS[@]}"; do
    common=(--arch "$a" ${SHAPE[$a]} --block 64 --batch 16 --threads 2 --data "$DATA" --force)
    "$STRIX" train "${common[@]}" --steps 1000000 --time "$PILOT" --eval-every 1000000 --eval-batches 1 \
        --metrics none --out "$work/pilot.st" >"$work/pilot.out" 2>/dev/null
    # "stopped: N of M steps, ..., S s; saved ..." -> N·B·T / S tokens per second
    tok=$(sed -n 's/^stopped: \([0-9]*\) of .*, \([0-9.]*\) s; saved.*/\1 \2/p' "$work/pilot.out" |
          awk '{ printf "%.0f", $1 * 1024 / $2 }')
    steps=$(awk -v t="${tok:-1000}" -v s="$BUDGET" 'BEGIN { n = int(0.95 * s * t / 1024); print (n > 10 ? n : 10) }')
    start=$(date +%s.%N)
    "$STRIX" train "${common[@]}" --steps "$steps" --time "$BUDGET" --eval-every "$steps" \
        --eval-batches 50 --warmup 100 --out "$work/$a.st" --metrics "$work/$a.jsonl" \
        --log-every 10 >"$work/$a.out" 2>"$work/$a.err"
    end=$(date +%s.%N)
    params=$(sed -n 's/^model: .*, \([0-9]*\) parameters;.*/\1/p' "$work/$a.out")
    done_line=$(grep -E '^(done|stopped):' "$work/$a.out")
    ran=$(echo "$done_line" | sed -n 's/^[a-z]*: \([0-9]*\) of.*/\1/p')
    val=$(echo "$done_line" | sed -n 's/.*val loss \([0-9.]*\).*/\1/p')
    # the last metrics line's tokens_per_s: training steps only (the evaluation is not in it)
    tps=$(grep -o '"tokens_per_s":[0-9.e+]*' "$work/$a.jsonl" | tail -1 | cut -d: -f2 |
          awk '{ printf "%.0f", $1 }')
    t0=$(date +%s.%N)
    "$STRIX" sample --model "$work/$a.st" --prompt "ROMEO:" --tokens 2000 --threads 2 >/dev/null
    t1=$(date +%s.%N)
    cps=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", 2000 / (b - a) }')
    echo "| $a | $params | $ran | $val | $tps | $cps |"
done
