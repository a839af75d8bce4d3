#!/usr/bin/env bash
# A training step on a machine shared with another busy program: config A (bench_gpt's defaults)
# idle and beside one busy process (a shell loop, as a compiler or a second job would be), strix
# and PyTorch, alternating; medians. Also strix at OMP_WAIT_POLICY=passive, which changes
# nothing for strix (its own pool, src/backends/cpu/workers.c) and is PyTorch's best setting there.
# Usage: bench/shared_core.sh [ROUNDS]   (env: BUILD=build, STEPS=30, TORCH_PYTHON=python3)
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
        for load in idle busy; do
            if [ $load = busy ]; then (while :; do :; done) & busy_pid=$!; sleep 0.2; fi
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
    m = re.match(r"(\d+) (idle|busy) .*?ms/step ([\d.]+)", line)
    if m:
        t.setdefault((int(m.group(1)), m.group(2)), []).append(float(m.group(3)))
print(f"| {'run':34s} | idle | beside a busy process | slowdown |")
print("|---|---|---|---|")
for i, name in enumerate(names):
    if (i, "idle") in t and (i, "busy") in t:
        idle, busy = statistics.median(t[(i, "idle")]), statistics.median(t[(i, "busy")])
        print(f"| {name:34s} | {idle:.1f} | {busy:.1f} | {busy / idle:.2f}x |")
PY
