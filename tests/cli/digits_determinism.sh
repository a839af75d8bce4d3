#!/usr/bin/env bash
# digits_determinism.sh - examples/digits.c is deterministic: two runs with one seed print the same
# parameter checksum (FNV-1a of both trained models), on 1 or 2 threads and on both CPU backends;
# another seed gives another checksum. Short runs (2 epochs, --no-gate: accuracy is not judged
# here; the example_digits test does that). The binary: $DIGITS, else `digits` next to $STRIX.
source "$(dirname "$0")/lib.bash"

DIGITS=${DIGITS:-$(dirname "$STRIX")/digits}
case "$DIGITS" in /*) ;; *) DIGITS="$ROOT/$DIGITS" ;; esac # lib.bash has cd'd into $WORK
DATA="$ROOT/../shared/data/digits.csv"
[ -x "$DIGITS" ] || { echo "no digits binary at $DIGITS"; exit 77; }
[ -f "$DATA" ] || { echo "no $DATA"; exit 77; }

# checksum ARGS...: the checksum line of one short run ("" on failure).
checksum() {
    "$DIGITS" --data "$DATA" --epochs 2 --no-gate "$@" >run.out 2>run.err \
        || { fail "digits $*: exit status $? ($(tail -n 1 run.err))"; return; }
    grep '^checksum ' run.out
}

a=$(checksum --threads 2)
b=$(checksum --threads 2)
[ -n "$a" ] && [ "$a" = "$b" ] && ok "two runs, one seed: $a" \
    || fail "two runs differ: '$a' vs '$b'"
t1=$(checksum --threads 1)
[ -n "$t1" ] && [ "$t1" = "$a" ] && ok "--threads 1 == --threads 2 (cpu)" \
    || fail "thread count changed the result: '$t1' vs '$a'"
c1=$(checksum --backend cpu-blas --threads 1)
c2=$(checksum --backend cpu-blas --threads 2)
[ -n "$c1" ] && [ "$c1" = "$c2" ] && ok "--threads 1 == --threads 2 (cpu-blas): $c1" \
    || fail "cpu-blas runs differ: '$c1' vs '$c2'"
s7=$(checksum --seed 7)
[ -n "$s7" ] && [ "$s7" != "$a" ] && ok "another seed differs" || fail "seed 7 gave '$s7'"
finish
