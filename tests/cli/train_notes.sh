#!/usr/bin/env bash
# train_notes.sh - what `strix train` tells about a run that will be slow or poor: --threads above
# the online cores is kept with one warning line naming the count (issue 10 item 10); a run that
# --time stopped before 1000 steps ends with one line saying so, its tok/s, why and what to do.
source "$(dirname "$0")/lib.bash"

head -c 20000 "$SHAKESPEARE" >corpus.txt
cores=$(getconf _NPROCESSORS_ONLN)
many=$((cores + 3))
"$STRIX" train --data corpus.txt --out t.st "${TINY[@]}" --steps 2 --threads "$many" >out.txt 2>err.txt \
    || fail "--threads $many: $(cat err.txt)"
[ "$(grep -c "warning: --threads $many exceeds the $cores online cores; oversubscribed threads make every step much slower (keeping $many)" err.txt)" -eq 1 ] \
    && ok "one warning for --threads $many" || fail "warning: $(cat err.txt)"
grep -q ", $many threads$" out.txt && ok "keeps $many threads" || fail "$(grep threads out.txt)"
"$STRIX" train --data corpus.txt --out u.st "${TINY[@]}" --steps 2 --threads "$cores" >/dev/null \
    2>err.txt
grep -q "exceeds" err.txt && fail "a warning for --threads $cores" || ok "no warning at $cores"

# a model that cannot reach 1000 steps in 0.3 s
"$STRIX" train --data corpus.txt --out v.st --d-model 64 --layers 2 --heads 2 --block 64 \
    --batch 16 --steps 5000 --time 0.3 --eval-batches 1 --threads 1 >out.txt 2>err.txt \
    || fail "--time run: $(tail -n 1 err.txt)"
steps=$(sed -nE 's/^stopped: ([0-9]+) of 5000.*/\1/p' out.txt)
[ -n "$steps" ] && [ "$steps" -lt 1000 ] || fail "the run did $steps steps, the test needs < 1000"
unit=steps; [ "$steps" = 1 ] && unit=step
note=$(grep "note: --time stopped the run after $steps $unit (" err.txt)
[ "$(wc -l <<<"$note")" -eq 1 ] && grep -q "tok/s): too few for good samples.*another process.*longer --time, fewer --threads, or an idle machine" <<<"$note" \
    && ok "the short-run note: $note" || fail "note: $(tail -n 2 err.txt)"
"$STRIX" train --data corpus.txt --out w.st "${TINY[@]}" --steps 30 --time 100 >/dev/null 2>err.txt
grep -q "too few for good samples" err.txt && fail "a note for a run that --time did not stop" \
    || ok "no note when --time did not stop the run"
finish
