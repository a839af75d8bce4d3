#!/usr/bin/env bash
# A training step on a machine shared with another busy program: config A (bench_gpt's defaults)
# idle, beside one busy process (a shell loop, as a compiler or a second job would be: "busy"),
# and beside one the scheduler favours, pinned to the last core at nice -10 ("busy, favoured":
# what a 2-core VM whose other vCPU work runs at a higher share looks like); strix and PyTorch,
# alternating; medians. Also OMP_WAIT_POLICY=passive, which changes nothing for strix (its own
# pool, src/backends/cpu/workers.c) and is PyTorch's best setting there. OLD=DIR adds the
# bench_gpt of another build (e.g. one from before a change) as a row.
# Usage: bench/shared_core.sh [ROUNDS]   (env: BUILD=build, OLD=, STEPS=30, TORCH_PYTHON=python3;
#        the favoured load needs root for nice -10)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-3}
STEPS=${STEPS:-30}
DATA=../shared/data/tinyshakespeare.txt
PY=${TORCH_PYTHON:-python3}
[ -x "$BUILD/bench_gpt" ] || { echo "build first: make build" >&2; exit 1; }
lscpu | sed -n 's/^Model name: *//p' | head -1
echo "cores online: $(nproc)"

declare -a names=("strix" "strix, OMP_WAIT_POLICY=passive")
declare -a cmds=("$BUILD/bench_gpt --data $DATA --steps $STEPS --threads 2"
                 "env OMP_WAIT_POLICY=passive $BUILD/bench_gpt --data $DATA --steps $STEPS --threads 2")
if [ -n "${OLD:-}" ]; then
    names+=("strix, $OLD" "strix, $OLD, OMP_WAIT_POLICY=passive")
    cmds+=("$OLD/bench_gpt --data $DATA --steps $STEPS --threads 2"
           "env OMP_WAIT_POLICY=passive $OLD/bench_gpt --data $DATA --steps $STEPS --threads 2")
fi
if "$PY" -c "import torch" 2>/dev/null; then
    names+=("PyTorch $("$PY" -c 'import torch; print(torch.__version__)')"
            "PyTorch, OMP_WAIT_POLICY=passive")
    cmds+=("$PY bench/torch_gpt.py --data $DATA --steps $STEPS --threads 2"
           "env OMP_WAIT_POLICY=passive $PY bench/torch_gpt.py --data $DATA --steps $STEPS --threads 2")
fi

log=$(mktemp)
busy_pid=""
stop_busy() { [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null; busy_pid=""; }
trap 'stop_busy; rm -f "$log"' EXIT
for ((r = 1; r <= ROUNDS; r++)); do
    for i in "${!cmds[@]}"; do
        for load in idle busy favoured; do
            last=$(($(nproc) - 1))
            case $load in
            busy) (while :; do :; done) & busy_pid=$! ;;
            favoured) nice -n -10 taskset -c "$last" bash -c 'while :; do :; done' & busy_pid=$! ;;
            esac
            [ $load = idle ] || sleep 0.2
            out=$(${cmds[$i]})
            stop_busy
            echo "$i $load $out" | tee -a "$log" >&2
        done
    done
done
echo "== ms/step, medians over $ROUNDS rounds =="
python3 - "$log" "${names[@]}" <<'PY'
import re, statistics, sys
log, names = sys.argv[1], sys.argv[2:]
t = {}
for line in open(log):
    m = re.match(r"(\d+) (idle|busy|favoured) .*?ms/step ([\d.]+)", line)
    if m:
        t.setdefault((int(m.group(1)), m.group(2)), []).append(float(m.group(3)))
print(f"| {'run':40s} | idle | busy (slowdown) | busy, favoured (slowdown) |")
print("|---|---|---|---|")
for i, name in enumerate(names):
    med = {k: statistics.median(t[(i, k)]) for k in ("idle", "busy", "favoured") if (i, k) in t}
    if len(med) == 3:
        idle = med["idle"]
        print(f"| {name:40s} | {idle:.1f} | {med['busy']:.1f} ({med['busy'] / idle:.2f}x) "
              f"| {med['favoured']:.1f} ({med['favoured'] / idle:.2f}x) |")
PY
