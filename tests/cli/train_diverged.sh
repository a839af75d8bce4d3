#!/usr/bin/env bash
# train_diverged.sh - a run that stops making updates never reports success (issue 10, bug 2):
# with every step, or 10 steps in a row, skipped for a non-finite loss (the testing flag
# --nan-from N makes the loss of step N and later read as NaN), `strix train` stops, says how many
# steps were skipped and since which step, writes no checkpoint after the skips began (the last
# good one stays byte for byte) and exits 1.
source "$(dirname "$0")/lib.bash"

RUN=("${TINY[@]}" --eval-batches 2 --log-every 5)
head -c 20000 "$SHAKESPEARE" >corpus.txt

# meta KEY FILE: a metadata value of a checkpoint
meta() {
    python3 -c 'import json,struct,sys
raw=open(sys.argv[2],"rb").read(); n=struct.unpack("<Q",raw[:8])[0]
print(json.loads(raw[8:8+n])["__metadata__"][sys.argv[1]])' "$1" "$2"
}

# check_diverged NAME PHRASE CMD...: exit 1 and the last stderr line holds PHRASE.
check_diverged() {
    local name=$1 phrase=$2
    shift 2
    "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    local last
    last=$(tail -n 1 "$WORK/err")
    [ "$rc" -eq 1 ] || fail "$name: exit status $rc, expected 1"
    if grep -qF -- "$phrase" <<<"$last"; then ok "$name (exit $rc): $last"
    else fail "$name: last stderr line: $last"; fi
    grep -q "^done:\|^stopped:" "$WORK/out" && fail "$name: reported a summary: $(cat "$WORK/out")"
}

# ---- every step skipped, fewer than 10: the run fails at its end, nothing written
check_diverged "every step skipped" \
    "training diverged: every step of the run: 5 steps in a row (steps 1 to 5) had a non-finite loss or gradient norm; no update at all; no checkpoint was written" \
    "$STRIX" train --data corpus.txt --out a.st "${RUN[@]}" --steps 5 --eval-every 10 --nan-from 1
[ -e a.st ] && fail "a checkpoint was written for a run without an update" || ok "no checkpoint"
[ "$(grep -c 'step skipped' "$WORK/err")" -eq 5 ] && ok "5 skip warnings" \
    || fail "skip warnings: $(grep -c 'step skipped' "$WORK/err")"

# ---- 10 in a row stop a long run at once
check_diverged "10 in a row" \
    "10 steps in a row (steps 1 to 10) had a non-finite loss or gradient norm; no update at all" \
    "$STRIX" train --data corpus.txt --out b.st "${RUN[@]}" --steps 300 --eval-every 100 --nan-from 1
[ "$(grep -c 'step skipped' "$WORK/err")" -eq 10 ] && ok "stopped after the 10th" \
    || fail "skip warnings: $(grep -c 'step skipped' "$WORK/err")"

# ---- good steps, then only skipped ones: the checkpoint of the last eval before the 10th is kept
check_diverged "diverged after step 14" \
    "(steps 15 to 24) had a non-finite loss or gradient norm; no update since step 14; the last good checkpoint c.st (step 20) is kept" \
    "$STRIX" train --data corpus.txt --out c.st "${RUN[@]}" --steps 60 --eval-every 10 --nan-from 15
[ "$(meta step c.st)" = 20 ] && ok "c.st holds step 20" || fail "c.st step $(meta step c.st)"
python3 -c 'import math,sys; sys.exit(0 if math.isfinite(float(sys.argv[1])) else 1)' \
    "$(meta val_loss c.st)" && ok "its val loss is finite" || fail "val loss $(meta val_loss c.st)"

# ---- a resumed run whose steps are all skipped until --stop-after: the checkpoint is untouched
"$STRIX" train --data corpus.txt --out d.st "${RUN[@]}" --steps 60 --eval-every 10 --stop-after 10 \
    >/dev/null 2>&1 || fail "run to step 10"
cp d.st d.before
check_diverged "resumed, all skipped until a stop" \
    "every step of the run: 3 steps in a row (steps 11 to 13) had a non-finite loss or gradient norm; no update since step 10; the last good checkpoint d.st (step 10) is kept" \
    "$STRIX" train --resume d.st --stop-after 13 --nan-from 11
same_file "the resumed checkpoint is byte-identical" d.st d.before

# ---- a few skipped steps amid good ones: success, with a warning that counts them
"$STRIX" train --data corpus.txt --out e.st "${RUN[@]}" --steps 20 --eval-every 10 --nan-from 18 \
    >"$WORK/out" 2>"$WORK/err"
rc=$?
[ "$rc" -eq 0 ] && ok "3 skipped of 20: exit 0" || fail "3 skipped of 20: exit $rc"
grep -q "warning: 3 of 20 steps were skipped for a non-finite loss or gradient norm, the run's last steps among them" \
    "$WORK/err" && ok "the summary warns" || fail "no summary warning: $(tail -n 2 "$WORK/err")"
finish
