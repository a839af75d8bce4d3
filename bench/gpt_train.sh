#!/usr/bin/env bash
# Config-A training steps, strix beside PyTorch in one run (DESIGN.md: vocab 65, block 64, 4 layers,
# 4 heads, d_model 128, batch 16, GELU MLP 4x, learned positions, untied head, AdamW, fp32,
# 2 threads, tinyshakespeare). Rounds alternate A and B; the summary quotes medians.
# Usage: bench/gpt_train.sh [ROUNDS]   (env: BUILD=build, STEPS=30, TORCH_PYTHONS="...")
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-3}
STEPS=${STEPS:-30}
DATA=../shared/data/tinyshakespeare.txt
# Every Python with torch we can find: Debian's python3-torch and any venv named in TORCH_PYTHONS.
PYTHONS=${TORCH_PYTHONS:-"/usr/bin/python3 python3"}

[ -x "$BUILD/bench_gpt" ] || { echo "build first: make build" >&2; exit 1; }
declare -a torch_cmds=()
for py in $PYTHONS; do
    if command -v "$py" >/dev/null && "$py" -c "import torch" 2>/dev/null; then
        # The best thread setting differs by version: try OpenBLAS at 1 thread and at its default.
        torch_cmds+=("$py bench/torch_gpt.py --data $DATA --steps $STEPS --threads 2")
        torch_cmds+=("env OPENBLAS_NUM_THREADS=1 $py bench/torch_gpt.py --data $DATA --steps $STEPS --threads 2")
    fi
done

log=$(mktemp)
for ((r = 1; r <= ROUNDS; r++)); do
    for backend in cpu cpu-blas; do
        echo "round $r strix/$backend: $("$BUILD/bench_gpt" --backend "$backend" --data "$DATA" --steps "$STEPS" --threads 2)" | tee -a "$log"
    done
    for cmd in "${torch_cmds[@]}"; do
        echo "round $r [$cmd]: $($cmd)" | tee -a "$log"
    done
done
echo "== medians over $ROUNDS rounds (ms/step, tok/s, max RSS MB) =="
python3 - "$log" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (.*?): .*?ms/step ([\d.]+) tok/s (\d+) maxrss_mb (\d+)", line)
    if m:
        rows.setdefault(m.group(1), []).append((float(m.group(2)), int(m.group(3)), int(m.group(4))))
med = {k: (statistics.median(a for a, _, _ in v), statistics.median(b for _, b, _ in v),
           max(c for _, _, c in v)) for k, v in rows.items()}
best = med.get("strix/cpu")
for k, (ms, tok, rss) in med.items():
    ratio = f"  strix(cpu)/this tok/s = {best[1] / tok:.2f}x" if best and not k.startswith("strix") else ""
    # an even number of rounds gives a median between two values: tok/s is printed rounded
    print(f"{k:90s} {ms:8.1f} {tok:8.0f} {rss:6d}{ratio}")
PY
rm -f "$log"
