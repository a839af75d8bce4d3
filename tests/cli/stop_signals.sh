#!/usr/bin/env bash
# stop_signals.sh - Ctrl-C and the files a run leaves. Two SIGINTs 0.3 s apart, the second during
# the save (--save-delay), end the run with exit 0, a complete checkpoint and no temp file, also
# when the process has worker threads (OpenMP, OpenBLAS) that may take the signal; a second SIGINT
# outside a save still ends the run at once (status 130). A run killed with SIGKILL leaves a lock
# file that never blocks the next run, and temp files that the next run into that --out removes
# (only those of ended processes and of that --out).
source "$(dirname "$0")/lib.bash"

head -c 20000 "$SHAKESPEARE" >corpus.txt
LONG=(--data corpus.txt "${TINY[@]}" --steps 1000000 --eval-every 1000000 --eval-batches 2
      --log-every 1)

# wait_for FILE PATTERN: until FILE has a line matching PATTERN (at most 20 s).
wait_for() {
    for _ in $(seq 200); do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# temps: the temp files in the current directory (any strix version's form)
temps() { ls -A | grep -E '^\.strix-tmp-|\.tmp\.[0-9]+$'; }

# ---- two SIGINTs during a save (the checkpoint at an eval) wait for it, whichever thread takes
# them; the run then stops and saves again
for backend in cpu cpu-blas; do
    out=two_$backend.st
    "$STRIX" train "${LONG[@]}" --eval-every 5 --backend $backend --threads 2 --save-delay 1 \
        --out $out >run.out 2>run.err &
    pid=$!
    wait_for run.out "^step 5: val loss" || fail "$backend: no eval: $(cat run.err)"
    sleep 0.2 # inside the save at step 5 (1 s)
    kill -INT $pid
    sleep 0.3
    kill -INT $pid
    wait $pid
    rc=$?
    [ $rc -eq 0 ] && ok "$backend, 2 threads: two SIGINTs during the save: exit 0" \
        || fail "$backend, 2 threads: two SIGINTs during the save: exit $rc: $(tail -1 run.err)"
    grep -q "interrupted at step 5 of 1000000; checkpoint saved to $out" run.err \
        && ok "$backend: stopped right after that save, at step 5" \
        || fail "$backend: no stop line at step 5: $(tail -2 run.err)"
    "$STRIX" sample --model $out --tokens 20 --seed 1 >sample.txt 2>sample.err \
        && [ "$(wc -c <sample.txt)" -ge 20 ] && ok "$backend: the checkpoint is complete" \
        || fail "$backend: the checkpoint does not load: $(cat sample.err)"
    [ -z "$(temps)" ] && ok "$backend: no temp file left" || fail "$backend: left: $(temps)"
    [ -e $out.lock ] && fail "$backend: lock file left"
done

# ---- a second SIGINT outside a save still ends the run at once. --step-delay 1.5 makes every
# step last 1.5 s (a sleep inside it), so two signals 0.3 s apart both land in one step even on a
# loaded machine; the first progress line says a step has just ended, so the next one is under way.
"$STRIX" train --data corpus.txt "${TINY[@]}" --steps 1000000 --eval-every 1000000 \
    --log-every 1 --threads 2 --step-delay 1.5 --out fast.st >/dev/null 2>fast.err &
pid=$!
wait_for fast.err "^step 1/" || fail "training did not start: $(cat fast.err)"
kill -INT $pid # inside step 2
sleep 0.3
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] && ok "a second SIGINT during a step: killed by it (status 130)" \
    || fail "a second SIGINT during a step: exit $rc, expected 130"
[ -z "$(temps)" ] || fail "temp file left after a second SIGINT: $(temps)"
[ -e fast.st ] && fail "a checkpoint was written after a second SIGINT during the step"
[ "$(tail -n 1 fast.err)" = "strix: stopped at once by a second signal; the last checkpoint is kept as it was" ] \
    && ok "it says so in one line" || fail "last line: $(tail -n 1 fast.err)"
# one SIGINT inside that long step: the step finishes, is saved, exit 0 (step 2 or 3, the one
# under way)
"$STRIX" train --data corpus.txt "${TINY[@]}" --steps 1000000 --eval-every 1000000 \
    --log-every 1 --threads 2 --step-delay 1.5 --out one.st >/dev/null 2>one.err &
pid=$!
wait_for one.err "^step 1/" || fail "training did not start: $(cat one.err)"
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 0 ] && grep -qE "interrupted at step [23] of 1000000; checkpoint saved to one.st" \
    one.err \
    && ok "one SIGINT during a long step: that step finishes, saved, exit 0" \
    || fail "one SIGINT during a long step: exit $rc: $(tail -1 one.err)"

# ---- --time stopping after one step says "1 step" (not "1 steps")
"$STRIX" train --data corpus.txt "${TINY[@]}" --steps 1000 --eval-every 1000 --eval-batches 2 \
    --time 0.2 --step-delay 0.5 --out t1.st >/dev/null 2>t1.err
grep -q "note: --time stopped the run after 1 step (" t1.err \
    && ok "--time after one step: '1 step'" || fail "--time after one step: $(cat t1.err)"

# ---- a SIGTERM after a SIGINT outside a save ends it too, one during the save waits
"$STRIX" train "${LONG[@]}" --eval-every 5 --threads 2 --save-delay 1 --out term.st \
    >term.out 2>term.err &
pid=$!
wait_for term.out "^step 5: val loss" || fail "no eval: $(cat term.err)"
sleep 0.2
kill -TERM $pid
sleep 0.3
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 0 ] && ok "SIGTERM then SIGINT during the save: exit 0" \
    || fail "SIGTERM then SIGINT during the save: exit $rc"

# ---- a killed run: its lock file never blocks, its temp files are removed by the next run
"$STRIX" train "${LONG[@]}" --out killed.st >/dev/null 2>killed.err &
pid=$!
wait_for killed.err "^step 5/" || fail "training did not start: $(cat killed.err)"
{ kill -KILL $pid; wait $pid; } 2>/dev/null
[ -e killed.st.lock ] && ok "SIGKILL leaves killed.st.lock" || fail "no lock file after SIGKILL"
# fnv NAME: the 64-bit FNV-1a hash in a temp file name (src/io/atomic.c)
fnv() {
    local s=$1 h=$((0xcbf29ce484222325)) i c
    for ((i = 0; i < ${#s}; i++)); do
        printf -v c '%d' "'${s:i:1}"
        h=$(((h ^ c) * 0x100000001b3))
    done
    printf '%016x' "$h"
}
sh -c 'exit 0' &
dead=$!
wait $dead
kill -0 $dead 2>/dev/null && fail "pid $dead still runs"
h=$(fnv killed.st)
echo partial >".strix-tmp-$dead-$h"          # of an ended process: removed
echo partial >"killed.st.tmp.$dead"          # of an earlier strix version: removed
echo live >".strix-tmp-$$-$h"                # of a live process (this shell): kept
echo other >".strix-tmp-$dead-$(fnv other.st)" # of another output: kept
# (--force: the killed run's metrics log is another run's)
"$STRIX" train --data corpus.txt "${TINY[@]}" --steps 4 --eval-every 2 --eval-batches 2 \
    --out killed.st --force >/dev/null 2>next.err
rc=$?
[ $rc -eq 0 ] && ok "the next run into the killed run's --out: exit 0" \
    || fail "the next run: exit $rc: $(cat next.err)"
grep -q "note: removed 2 temporary files of killed.st left by an ended run" next.err \
    && ok "it names the 2 stale temp files it removed" || fail "no note: $(cat next.err)"
[ ! -e ".strix-tmp-$dead-$h" ] && [ ! -e "killed.st.tmp.$dead" ] \
    && ok "stale temp files removed" || fail "stale temp files kept: $(temps)"
[ -e ".strix-tmp-$$-$h" ] && [ -e ".strix-tmp-$dead-$(fnv other.st)" ] \
    && ok "a live process's and another output's temp files kept" || fail "removed too much"
[ -e killed.st.lock ] && fail "lock file left after the next run" || ok "lock file removed"
"$STRIX" sample --model killed.st --tokens 5 >/dev/null 2>&1 && ok "its checkpoint loads" \
    || fail "the next run's checkpoint does not load"
finish
