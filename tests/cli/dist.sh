#!/usr/bin/env bash
# dist.sh - data-parallel `strix train` under OpenMPI (docs/DISTRIBUTED.md), on this machine's
# loopback: 1, 2 and 4 processes (--procs, and plain mpirun) write the checkpoint one process
# writes with the same --grad-shards, byte for byte (with gradient accumulation and dropout, and
# for a sequence model too); a 2-process checkpoint resumes on 1 and on 4 processes to the
# uninterrupted run's bytes; Ctrl-C on the launcher stops every process at one step, saves once
# and resumes bit for bit (also when it comes at start-up), a second one ends all at once; a
# killed process ends the job within 10 s with one line naming its rank and leaves the checkpoint
# intact; bad input (processes started with different flags included) is one line and a non-zero
# exit. Skips (77) in a
# build without MPI or without mpirun.
source "$(dirname "$0")/lib.bash"

if ! "$STRIX" --version | grep -q "multi-process training: MPI"; then
    echo "skip: strix was built without MPI"
    exit 77
fi
if ! command -v mpirun >/dev/null; then
    echo "skip: no mpirun (apt-get install openmpi-bin)"
    exit 77
fi
# as root (CI) plain mpirun needs these; in containers shared-memory copies via ptrace may be
# refused, so the vader transport copies through its buffers
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
# a sanitizer build: OpenMPI's allocations outlive MPI_Finalize, so no leak check here (the
# one-process paths are checked by the other tests)
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
# plain mpirun without its notices, and without libevent's epoll warnings, which OpenMPI 4.1
# prints now and then as quick jobs end
mpirun_quiet() {
    local rc
    mpirun --quiet "$@" 2>"$WORK/mpirun.err"
    rc=$?
    grep -v '^\[warn\] Epoll' "$WORK/mpirun.err" >&2
    return $rc
}
# signalled NAME "SIG@SECONDS ..." ARGS...: `strix train ARGS --out NAME.st` in the background
# (stdout NAME.out, stderr NAME.err), each signal sent to it that many seconds after the one
# before; rc = its exit status.
signalled() {
    local name=$1 sig launcher
    local -a plan
    read -ra plan <<<"$2"
    shift 2
    "$STRIX" train "$@" --out "$name.st" >"$name.out" 2>"$name.err" &
    launcher=$!
    for sig in "${plan[@]}"; do
        sleep "${sig#*@}"
        kill "-${sig%@*}" $launcher
    done
    wait $launcher
    rc=$?
}
MODEL=(--d-model 32 --layers 1 --heads 2 --block 16 --batch 8)
RUN=(--data "$SHAKESPEARE" "${MODEL[@]}" --steps 20 --eval-every 10 --eval-batches 2
     --threads 1 --metrics none --log-every 1000)

# ---- the same bits on any process count ----
"$STRIX" train "${RUN[@]}" --grad-shards 4 --out s4.st >s4.out 2>&1 || fail "one process, 4 shards"
for n in 1 2 4; do
    "$STRIX" train "${RUN[@]}" --grad-shards 4 --procs $n --out p$n.st >p$n.out 2>p$n.err \
        || { fail "--procs $n"; cat p$n.err >&2; }
    same_file "--procs $n == one process (--grad-shards 4)" s4.st p$n.st
done
[ "$(grep -c '^done:' p4.out)" = 1 ] && [ "$(grep -c '^step 20: val loss' p4.out)" = 1 ] \
    && ok "4 processes: rank 0 alone prints" || { fail "output of 4 processes:"; cat p4.out >&2; }
grep -q "data parallel: 4 processes x 2 sequences of the global batch 8, 4 gradient shards" \
    p4.out && ok "setup line" || fail "no data-parallel setup line"
mpirun -np 2 --oversubscribe --bind-to none "$STRIX" train "${RUN[@]}" --grad-shards 4 \
    --out m2.st >m2.out 2>&1 || fail "mpirun -np 2"
same_file "mpirun -np 2 == one process" s4.st m2.st
"$STRIX" train "${RUN[@]}" --procs 2 --out d2.st >/dev/null 2>&1 || fail "--procs 2, default shards"
"$STRIX" train "${RUN[@]}" --grad-shards 2 --out d1.st >/dev/null 2>&1 || fail "2 shards"
same_file "--procs 2 shards by 2 by default" d1.st d2.st

EXTRA=(--grad-accum 2 --dropout 0.1 --grad-shards 2)
"$STRIX" train "${RUN[@]}" "${EXTRA[@]}" --out a1.st >/dev/null 2>&1 || fail "accum+dropout, 1"
"$STRIX" train "${RUN[@]}" "${EXTRA[@]}" --procs 2 --out a2.st >/dev/null 2>&1 \
    || fail "accum+dropout, 2"
same_file "--grad-accum 2 --dropout 0.1: 2 processes == 1" a1.st a2.st
LSTM=(--data "$SHAKESPEARE" --arch lstm --d-model 32 --layers 1 --block 16 --batch 4 --steps 10
      --eval-every 5 --eval-batches 2 --threads 1 --metrics none --grad-shards 2)
"$STRIX" train "${LSTM[@]}" --out l1.st >/dev/null 2>&1 || fail "lstm, 1"
"$STRIX" train "${LSTM[@]}" --procs 2 --out l2.st >/dev/null 2>&1 || fail "lstm, 2"
same_file "an LSTM: 2 processes == 1" l1.st l2.st

# ---- resume on another process count ----
"$STRIX" train "${RUN[@]}" --grad-shards 4 --procs 2 --stop-after 7 --out r1.st >/dev/null 2>&1 \
    || fail "2 processes stopped at 7"
cp r1.st r4.st
"$STRIX" train --resume r1.st --threads 1 >r1.out 2>&1 || fail "resume on 1 process"
same_file "2-process checkpoint resumed on 1 == uninterrupted" s4.st r1.st
"$STRIX" train --resume r4.st --procs 4 >/dev/null 2>&1 || fail "resume on 4 processes"
same_file "2-process checkpoint resumed on 4 == uninterrupted" s4.st r4.st

# ---- Ctrl-C on the launcher: one step for all, one save, a bit-identical resume ----
LONG=(--data "$SHAKESPEARE" "${MODEL[@]}" --steps 60 --eval-every 1000 --eval-batches 2
      --threads 1 --metrics none --log-every 1000 --grad-shards 2)
"$STRIX" train "${LONG[@]}" --out u.st >/dev/null 2>&1 || fail "uninterrupted 60 steps"
signalled c "INT@1.5" "${LONG[@]}" --procs 2 --step-delay 0.05
if [ $rc -eq 0 ] && grep -q "interrupted at step" c.err && [ -f c.st ]; then
    ok "Ctrl-C: $(grep -o 'interrupted at step [0-9]* of 60' c.err), exit 0"
else
    fail "Ctrl-C: exit $rc"; cat c.err >&2
fi
[ "$(grep -c 'saved' c.out c.err | awk -F: '{s += $2} END {print s}')" -le 2 ] \
    && ok "Ctrl-C: saved once" || { fail "Ctrl-C: several saves"; cat c.out c.err >&2; }
"$STRIX" train --resume c.st --procs 2 >/dev/null 2>&1 || fail "resume after Ctrl-C"
same_file "interrupted on 2 processes + resumed == uninterrupted" u.st c.st

# Ctrl-C at start-up is never lost: the ranks stop after their first step, rank 0 saves
signalled early "INT@0.1" "${RUN[@]}" --procs 2 --step-delay 0.2
[ $rc -eq 0 ] && grep -q "interrupted at step 1 of 20" early.err && [ -f early.st ] \
    && ok "Ctrl-C at start-up: stopped at step 1, saved" \
    || { fail "Ctrl-C at start-up: exit $rc"; cat early.err >&2; }
# a second Ctrl-C ends every process at once: one line, exit 130
signalled twice "INT@1 INT@0.1" "${RUN[@]}" --procs 2 --step-delay 0.5
[ $rc -eq 130 ] && [ "$(wc -l <twice.err)" -eq 1 ] && grep -q "stopped at once" twice.err \
    && ok "a second Ctrl-C: exit 130, $(cat twice.err)" \
    || { fail "a second Ctrl-C: exit $rc"; cat twice.err >&2; }

# a hang-up ends every process at once: no save at the step it was in
signalled hup "HUP@1.5" "${RUN[@]}" --procs 2 --step-delay 5
[ $rc -eq 130 ] && [ ! -e hup.st ] && grep -q "no checkpoint was saved" hup.err \
    && ok "SIGHUP: exit 130, nothing saved: $(cat hup.err)" \
    || { fail "SIGHUP: exit $rc"; cat hup.err >&2; }
# stdout that cannot be written: exit 1, as every command
"$STRIX" train "${RUN[@]}" --procs 2 --out full.st >/dev/full 2>full.err
rc=$?
[ $rc -eq 1 ] && grep -q "cannot write to standard output" full.err \
    && ok "--procs >/dev/full: exit 1" || { fail "--procs >/dev/full: exit $rc"; cat full.err >&2; }

# ---- a killed process ----
"$STRIX" train "${LONG[@]}" --steps 100000 --eval-every 20 --step-delay 0.01 --procs 2 \
    --out k.st >k.out 2>k.err &
launcher=$!
for _ in $(seq 200); do [ -f k.st ] && break; sleep 0.1; done
mpirun_pid=$(pgrep -P $launcher | head -1)
victim=$(pgrep -P "$mpirun_pid" | sort -n | tail -1)
if [ -z "$victim" ]; then
    fail "no rank process found under the launcher"
    kill -9 $launcher 2>/dev/null
else
    t0=$(date +%s%N)
    kill -9 "$victim"
    wait $launcher
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    lines=$(wc -l <k.err)
    if [ $rc -ne 0 ] && [ $ms -lt 10000 ] && [ "$lines" -eq 1 ] && grep -q "rank [0-9] died (signal 9" k.err
    then
        ok "killed rank: exit $rc after $ms ms: $(cat k.err)"
    else
        fail "killed rank: exit $rc after $ms ms, $lines lines:"; cat k.err >&2
    fi
    # mpirun may return before the last rank it stopped is gone (and its lock on k.st with it)
    for _ in $(seq 100); do flock -n k.st.lock true && break; sleep 0.1; done
    "$STRIX" train --resume k.st --threads 1 --stop-after 100 >kr.out 2>&1 \
        && grep -q "resuming at step" kr.out && ok "the checkpoint is intact: $(grep -o 'resuming at step [0-9]*' kr.out)" \
        || { fail "checkpoint after the kill does not resume"; cat kr.out >&2; }
fi

# ---- bad input ----
expect_error "global batch not divisible" "must be divisible by --grad-shards 3" \
    "$STRIX" train "${RUN[@]}" --procs 3 --out bad.st
expect_error "--resume with another --batch" "--batch conflicts with the checkpoint" \
    "$STRIX" train --resume r1.st --batch 16
"$STRIX" train "${RUN[@]}" --grad-shards 2 --stop-after 5 --out two.st >/dev/null 2>&1 \
    || fail "a 2-shard run to resume"
expect_error "resume on a process count not dividing the shards" "dividing 2, not on 4" \
    "$STRIX" train --resume two.st --procs 4
expect_error "no mpirun" "needs OpenMPI's mpirun on PATH" \
    /usr/bin/env PATH=/nonexistent "$STRIX" train "${RUN[@]}" --procs 2 --out bad.st
expect_error "--procs under mpirun" "leave it out" \
    mpirun_quiet -np 2 --oversubscribe "$STRIX" train "${RUN[@]}" --procs 2 --out bad.st
"$STRIX" train "${RUN[@]}" --metrics log.jsonl --out logged.st >/dev/null 2>&1 \
    || fail "a run with a metrics log"
cp log.jsonl log0.jsonl
expect_error "processes started with different flags" "started with different settings" \
    mpirun_quiet -np 1 "$STRIX" train "${RUN[@]}" --out bad.st : \
    -np 1 "$STRIX" train "${RUN[@]}" --d-model 64 --out bad.st
mpirun_quiet -np 1 "$STRIX" train "${RUN[@]}" --metrics log.jsonl --force --out logged.st : \
    -np 1 "$STRIX" train "${RUN[@]}" --metrics log.jsonl --force --lr 0.01 --out logged.st \
    >/dev/null 2>&1 && fail "different --lr per process accepted"
same_file "a refused run leaves the metrics log alone" log0.jsonl log.jsonl
expect_error "--grad-shards not a multiple of the processes" "not a multiple of the 2 processes" \
    "$STRIX" train "${RUN[@]}" --procs 2 --grad-shards 1 --out bad.st
[ ! -e bad.st ] && ok "no checkpoint from refused runs" || fail "a refused run wrote bad.st"
finish
