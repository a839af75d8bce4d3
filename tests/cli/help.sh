#!/usr/bin/env bash
# help.sh - `strix --help`, `strix train --help`, `strix sample --help` list every flag with its
# default and exit 0; `strix --version` prints the version; no subcommand is a usage error. Every
# output to stdout that cannot be written (>/dev/full: the help texts, train's result lines,
# sample's text, explain's table) is an error: one line on stderr, exit 1.
source "$(dirname "$0")/lib.bash"

"$STRIX" --help >top.txt 2>&1 && grep -q "strix train" top.txt && grep -q "strix sample" top.txt \
    && ok "strix --help" || fail "strix --help"
"$STRIX" --version | grep -qE '^strix [0-9]+\.[0-9]+\.[0-9]+$' && ok "--version" || fail "--version"
"$STRIX" >/dev/null 2>&1
[ $? -eq 2 ] && ok "no subcommand: exit 2" || fail "no subcommand"
for cmd in train sample; do
    "$STRIX" $cmd --help >$cmd.txt 2>&1 || fail "$cmd --help exit status"
    # every flag line ("  --name ...") except --help states its default
    missing=$(grep -E '^  --' $cmd.txt | grep -v -- '--help' | grep -v -- '--stop-after' \
        | grep -vi 'default' || true)
    [ -z "$missing" ] && ok "$cmd --help: every flag has its default" \
        || fail "$cmd --help: flags without a default: $missing"
done
for flag in data out steps time d-model layers heads head-sizes block batch lr min-lr warmup \
    weight-decay clip seed eval-every eval-batches val-fraction threads backend rope relu tie \
    sequential resume stop-after no-bias init-from metrics force keep-best patience; do
    grep -q -- "--$flag" train.txt || fail "train --help lacks --$flag"
done
for flag in model prompt tokens temperature top-k top-p seed; do
    grep -q -- "--$flag" sample.txt || fail "sample --help lacks --$flag"
done
# one flags header per command (plot printed "Flags:" and then "Flags (also --name=value):")
for cmd in train sample explain export plot; do
    n=$("$STRIX" $cmd --help 2>&1 | grep -c '^Flags')
    [ "$n" -eq 1 ] && ok "$cmd --help: one flags header" || fail "$cmd --help: $n flags headers"
done
grep -q "2000" train.txt && ok "train --help names the default step count" || fail "no 2000"
# the flags --resume accepts, as the code accepts them
"$STRIX" train --help | tr '\n' ' ' | grep -q -- "--out, --threads, --time, --backend, --log-every, --metrics, --keep-best, --patience, --force, --procs and --stop-after" \
    && ok "train --help lists the flags allowed with --resume" || fail "resume flag list"
grep -q "bit-identical" train.txt && grep -q "within rounding" train.txt \
    && ok "train --help: same backend bit-identical, another backend to rounding" \
    || fail "train --help does not qualify resuming on another backend"
grep -q -- "--steps and --time combine" train.txt && ok "train --help: --steps and --time combine" \
    || fail "train --help: --steps/--time"
for flag in data out threads time backend log-every stop-after; do
    case $flag in
        data) extra=(--data "$SHAKESPEARE") ;;
        out) extra=(--out r2.st) ;;
        threads) extra=(--threads 1) ;;
        time) extra=(--time 100) ;;
        backend) extra=(--backend cpu-blas) ;;
        log-every) extra=(--log-every 7) ;;
        stop-after) extra=(--stop-after 3) ;;
    esac
    [ -f r.st ] || "$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" --steps 4 --eval-every 2 \
        --eval-batches 2 --out r.st --stop-after 2 >/dev/null 2>&1
    cp r.st r1.st
    "$STRIX" train --resume r1.st "${extra[@]}" >/dev/null 2>resume.err \
        && ok "--resume accepts --$flag" || fail "--resume refuses --$flag: $(cat resume.err)"
done
# ---- stdout cannot be written: one line on stderr, exit 1 (never a silent 0)
if [ -w /dev/full ]; then
    # full_fails NAME CMD...: CMD >/dev/full exits 1, its last line on stderr says that it
    # cannot write, and why
    full_fails() {
        local name=$1
        shift
        "$@" >/dev/full 2>full.err
        local rc=$?
        # one line says so, the last (train's progress lines come before it)
        if [ $rc -eq 1 ] && [ "$(grep -c "cannot write" full.err)" -eq 1 ] \
            && tail -1 full.err | grep -qE "^strix: cannot write .*: No space left on device$"
        then
            ok "$name >/dev/full: exit 1, $(tail -1 full.err)"
        else
            fail "$name >/dev/full: exit $rc, stderr: $(cat full.err)"
        fi
    }
    full_fails "strix --help" "$STRIX" --help
    full_fails "strix help" "$STRIX" help
    for cmd in train sample explain; do full_fails "strix $cmd --help" "$STRIX" $cmd --help; done
    full_fails "strix train (result lines)" "$STRIX" train --data "$SHAKESPEARE" "${TINY[@]}" \
        --steps 2 --eval-every 2 --eval-batches 1 --out full.st
    "$STRIX" train --resume full.st 2>&1 | grep -q "already finished its 2 steps" \
        && ok "the checkpoint of the run with stdout full is complete" || fail "full.st"
    full_fails "strix sample" "$STRIX" sample --model full.st --tokens 20
    full_fails "strix explain (table)" "$STRIX" explain --model full.st --prompt "ROMEO: "
    "$STRIX" explain --model full.st --prompt "ROMEO: " >/dev/null 2>&1 \
        && ok "strix explain to /dev/null: exit 0" || fail "explain to /dev/null fails"
else
    echo "note: no writable /dev/full; the write-error checks are skipped"
fi
finish
