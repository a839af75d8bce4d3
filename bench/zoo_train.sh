#!/usr/bin/env bash
# Layer-zoo training steps, strix beside PyTorch in one run: the MLP 256-512-512-10 at batch 64 and
# the CNN (2x conv-BN-ReLU-maxpool, linear) on 32x3x32x32, each step = forward, cross-entropy,
# backward, AdamW (bench/bench_zoo.c, bench/torch_zoo.py), 2 threads. Rounds alternate strix
# (cpu, cpu-blas) and PyTorch (each Python at OpenBLAS's default and at OPENBLAS_NUM_THREADS=1);
# the summary quotes medians of the per-round medians and the time ratio strix/PyTorch (> 1: strix
# is slower). Every run keeps its own OpenMP wait policy (the default: spinning, fastest on an idle
# machine); set OMP_WAIT_POLICY for all of them from outside if you like.
# Usage: bench/zoo_train.sh [ROUNDS]   (env: BUILD=build, STEPS=40, TORCH_PYTHONS="...")
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-3}
STEPS=${STEPS:-40}
# Every Python with torch we can find: Debian's python3-torch and any venv named in TORCH_PYTHONS.
PYTHONS=${TORCH_PYTHONS:-"/usr/bin/python3 python3"}

[ -x "$BUILD/bench_zoo" ] || { echo "build first: make build" >&2; exit 1; }
declare -a torch_cmds=()
for py in $PYTHONS; do
    if command -v "$py" >/dev/null && "$py" -c "import torch" 2>/dev/null; then
        torch_cmds+=("$py bench/torch_zoo.py --steps $STEPS --threads 2")
        torch_cmds+=("env OPENBLAS_NUM_THREADS=1 $py bench/torch_zoo.py --steps $STEPS --threads 2")
    fi
done

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for ((r = 1; r <= ROUNDS; r++)); do
    for backend in cpu cpu-blas; do
        "$BUILD/bench_zoo" --backend "$backend" --steps "$STEPS" --threads 2 |
            while read -r line; do echo "round $r strix/$backend: $line"; done | tee -a "$log"
    done
    for cmd in "${torch_cmds[@]}"; do
        $cmd | while read -r line; do echo "round $r [$cmd]: $line"; done | tee -a "$log"
    done
done
echo "== medians over $ROUNDS rounds (ms/step, max RSS MB) =="
python3 - "$log" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (.*?): .*? (mlp|cnn) threads \d+ ms/step ([\d.]+) maxrss_mb (\d+)",
                 line)
    if m:
        rows.setdefault((m.group(2), m.group(1)), []).append((float(m.group(3)), int(m.group(4))))
for model in ("mlp", "cnn"):
    med = {k[1]: (statistics.median(a for a, _ in v), max(b for _, b in v))
           for k, v in rows.items() if k[0] == model}
    strix = {k: ms for k, (ms, _) in med.items() if k.startswith("strix")}
    best_torch = min((ms for k, (ms, _) in med.items() if not k.startswith("strix")),
                     default=None)
    print(f"-- {model}")
    for k, (ms, rss) in med.items():
        print(f"{k:100s} {ms:9.3f} {rss:6d}")
    if best_torch:
        for k, ms in strix.items():
            print(f"{k} / fastest PyTorch ({best_torch:.3f} ms): {ms / best_torch:.2f}x time")
PY
