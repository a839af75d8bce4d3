#!/usr/bin/env bash
# GPT training throughput as the model grows, strix beside PyTorch in one run: tokens/s for d_model
# 128 256 384 512 768 (heads = d_model/32, 4 layers up to 256, 6 above) x block 64 256 1024, at a
# constant 1024 tokens per step (batch = 1024/block); fp32, 2 threads, tinyshakespeare, the
# bench_gpt / torch_gpt.py model. Each round runs strix then PyTorch per config; the table quotes
# medians over rounds. STEPS is the step count of the smallest config; bigger ones get fewer
# (scaled by layers*d*(6d+block), at least 2) so each measurement takes a few seconds.
# Usage: bench/gpt_scaling.sh [ROUNDS]   (env: BUILD=build, STEPS=30, WARMUP=2,
#        TORCH_PYTHON=python3: a Python with torch, e.g. a venv with `pip install torch`)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-1}
STEPS=${STEPS:-30}
WARMUP=${WARMUP:-2}
DATA=../shared/data/tinyshakespeare.txt
PY=${TORCH_PYTHON:-python3}

[ -x "$BUILD/bench_gpt" ] || { echo "build first: make build" >&2; exit 1; }
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), flags: $(lscpu | grep -owE 'avx2|avx512f' | sort -u | paste -sd' ')"
echo "torch: $("$PY" -c 'import torch; print(torch.__version__)') ($PY)"

log=$(mktemp)
for ((r = 1; r <= ROUNDS; r++)); do
    for d in 128 256 384 512 768; do
        for t in 64 256 1024; do
            h=$((d / 32)) l=$((d <= 256 ? 4 : 6)) b=$((1024 / t))
            n=$((STEPS * 4 * 128 * (6 * 128 + 64) / (l * d * (6 * d + t))))
            n=$((n < 2 ? 2 : n))
            args="--data $DATA --steps $n --warmup-steps $WARMUP --threads 2 --batch $b --block $t --layers $l --heads $h --d-model $d"
            echo "round $r strix $d $h $l $t $b: $("$BUILD/bench_gpt" --backend cpu $args)" | tee -a "$log"
            echo "round $r torch $d $h $l $t $b: $("$PY" bench/torch_gpt.py $args)" | tee -a "$log"
        done
    done
done
echo "== medians over $ROUNDS rounds, 2 threads, 1024 tokens/step =="
python3 - "$log" <<'PY'
import re, statistics, sys
tok, rss = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (\w+) ([\d ]+): .*?tok/s (\d+) maxrss_mb (\d+)", line)
    if m:
        tok.setdefault((m.group(1), m.group(2)), []).append(int(m.group(3)))
        if m.group(1) == "strix":
            rss.setdefault(m.group(2), []).append(int(m.group(4)))
print("| d_model | heads | layers | block | batch | strix tok/s | PyTorch tok/s | strix/PyTorch | strix peak RSS MB |")
print("|---|---|---|---|---|---|---|---|---|")
fmt = lambda x: "-" if x is None else f"{x:.0f}"  # an even round count can give a .5 median
for cfg in dict.fromkeys(k for _, k in tok):
    s, p = (statistics.median(tok[(f, cfg)]) if (f, cfg) in tok else None for f in ("strix", "torch"))
    ratio = f"{s / p:.2f}x" if s and p else "-"
    print(f"| {' | '.join(cfg.split())} | {fmt(s)} | {fmt(p)} | {ratio} | {max(rss[cfg]) if cfg in rss else '-'} |")
PY
rm -f "$log"
