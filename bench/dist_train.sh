#!/usr/bin/env bash
# Data-parallel training on one machine: tokens/s of 1 process x 2 threads beside 2 processes x
# 1 thread (`strix train --procs 2`), both with --grad-shards 2 so both train the same bits, for
# config A (B16 T64, 4 layers, 4 heads, d_model 128) and nanoGPT's Shakespeare CPU shape (B8 T256,
# 6 layers, 6 heads, d_model 384), tinyshakespeare. Rounds alternate the two; the summary quotes
# medians. Then bench_dist times the gradient exchange alone (2 ranks, and 1 process: the tree
# only), gives its share of a step and estimates what a second machine would add.
# tok/s is the progress line's at the last step (from the first step; no warmup is dropped).
# Usage: bench/dist_train.sh [ROUNDS]   (env: BUILD=build, STEPS_A=200, STEPS_NANO=20,
#        LINK_GBIT=10, the assumed link between two machines in Gb/s)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-3}
STEPS_A=${STEPS_A:-200}
STEPS_NANO=${STEPS_NANO:-20}
LINK_GBIT=${LINK_GBIT:-10}
DATA=../shared/data/tinyshakespeare.txt
declare -A SHAPE=(
    [config-A]="--batch 16 --block 64 --layers 4 --heads 4 --d-model 128"
    [nanogpt]="--batch 8 --block 256 --layers 6 --heads 6 --d-model 384"
)
declare -A STEPS=([config-A]=$STEPS_A [nanogpt]=$STEPS_NANO)
declare -A LAYOUT=([1x2]="--threads 2" [2x1]="--procs 2 --threads 1")

if [ ! -x "$BUILD/strix" ] || [ ! -x "$BUILD/bench_dist" ]; then
    echo "build first: make build" >&2
    exit 1
fi
[ -f "$DATA" ] || { echo "no corpus at $DATA" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "needs OpenMPI's mpirun (apt-get install openmpi-bin)" >&2; exit 1; }
# strix train --procs adds these itself; bench_dist's mpirun needs them here
MPIRUN=(mpirun -np 2 --bind-to none)
[ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)
[ "$(nproc)" -ge 2 ] || MPIRUN+=(--oversubscribe)

echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), nproc $(nproc)," \
     "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
for ((r = 1; r <= ROUNDS; r++)); do
    for shape in config-A nanogpt; do
        # odd rounds start with one process, even rounds with two
        order="1x2 2x1"
        ((r % 2)) || order="2x1 1x2"
        for layout in $order; do
            n=${STEPS[$shape]}
            rm -f "$tmp/m.safetensors"
            # shellcheck disable=SC2086 # the flag lists split into words
            out=$("$BUILD/strix" train --data "$DATA" --out "$tmp/m.safetensors" --steps "$n" \
                  --eval-every $((n + 1)) --eval-batches 1 --metrics none --log-every "$n" \
                  --grad-shards 2 ${SHAPE[$shape]} ${LAYOUT[$layout]} 2>&1) \
                || { echo "$out" >&2; exit 1; }
            tok=$(grep -o "step $n/$n | [^|]*| [^|]*| [0-9.]* tok/s" <<<"$out" | grep -o '[0-9.]* tok/s$')
            echo "round $r $shape $layout: $tok" | tee -a "$log"
        done
    done
done
for procs in 2 1; do
    if ((procs == 2)); then "${MPIRUN[@]}" "$BUILD/bench_dist" --shards 2; else "$BUILD/bench_dist" --shards 2; fi |
        tee -a "$log"
done
python3 - "$log" "$ROUNDS" "$LINK_GBIT" <<'PY'
import re, statistics, sys
log, rounds, gbit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
tokens = {"config-A": 16 * 64, "nanogpt": 8 * 256}  # tokens per step
runs, ex = {}, {}
for line in open(log):
    m = re.match(r"round \d+ (\S+) (\S+): ([\d.]+) tok/s", line)
    if m:
        runs.setdefault((m.group(1), m.group(2)), []).append(float(m.group(3)))
    m = re.match(r"bench_dist (\S+) .* ranks (\d+) .* sent (\d+) ms ([\d.]+)", line)
    if m:
        ex[(m.group(1), int(m.group(2)))] = (float(m.group(3)), float(m.group(4)))
print(f"== medians over {rounds} rounds: tok/s, ms/step; 2 processes / 1 process ==")
tok = {k: statistics.median(v) for k, v in runs.items()}
for shape in tokens:
    one, two = tok.get((shape, "1x2")), tok.get((shape, "2x1"))
    if one is None or two is None:
        continue
    for name, t in (("1 process x 2 threads", one), ("2 processes x 1 thread", two)):
        print(f"{shape:9s} {name:23s} {t:8.0f} tok/s {1e3 * tokens[shape] / t:8.1f} ms/step")
    print(f"{shape:9s} 2 processes / 1 process {two / one:8.2f}x")
print("== gradient exchange (bench_dist, --shards 2, median): ms per step, share of that step ==")
for shape in tokens:
    for ranks, layout, what in ((1, "1x2", "1 process, the tree only"),
                                (2, "2x1", "2 ranks: all-to-all, tree, all-gather")):
        if (shape, ranks) in ex and (shape, layout) in tok:
            sent, ms = ex[(shape, ranks)]
            step = 1e3 * tokens[shape] / tok[(shape, layout)]
            sent_mb = f", {sent / 1e6:.1f} MB sent per rank" if ranks > 1 else ""
            print(f"{shape:9s} {what:38s} {ms:8.3f} ms {100 * ms / step:6.2f} % of "
                  f"{step:.1f} ms{sent_mb}")
# Two machines, one process of 2 threads each, half the global batch each: the compute of a step
# halves, and every rank sends (and receives) the 2-rank exchange's bytes over the link.
print(f"== a second machine (assumed: {gbit:g} Gb/s Ethernet, full duplex, latency and overlap "
      "ignored, compute halves) ==")
for shape in tokens:
    if (shape, 2) not in ex or (shape, 1) not in ex or (shape, "1x2") not in tok:
        continue
    sent, ms2 = ex[(shape, 2)]
    step1 = 1e3 * tokens[shape] / tok[(shape, "1x2")]
    wire = 1e3 * sent / (gbit * 1e9 / 8)
    step = (step1 - ex[(shape, 1)][1]) / 2 + ms2 + wire
    best = max(tok[(shape, "1x2")], tok.get((shape, "2x1"), 0))
    print(f"{shape:9s} {sent / 1e6:.1f} MB/step on the wire: +{wire:.1f} ms, step "
          f"~{step:.1f} ms, ~{1e3 * tokens[shape] / step:.0f} tok/s, "
          f"{1e3 * tokens[shape] / step / best:.2f}x one machine's best")
PY
