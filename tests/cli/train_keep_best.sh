#!/usr/bin/env bash
# train_keep_best.sh - `strix train --keep-best` keeps <stem>.best.safetensors, the checkpoint of
# the scheduled evaluation with the lowest val loss, beside the last; --patience N stops the run
# (saved, exit 0, the reason printed) after N evaluations without a new best; an interrupted run
# resumed with the same flags stops at the same step with the same files.
source "$(dirname "$0")/lib.bash"

# a high learning rate: the val loss falls, then rises again within 60 steps
RUN=("${TINY[@]}" --eval-batches 2 --log-every 5 --steps 60 --eval-every 5 --lr 3e-2)
head -c 20000 "$SHAKESPEARE" >corpus.txt

meta() {
    python3 -c 'import json,struct,sys
raw=open(sys.argv[2],"rb").read(); n=struct.unpack("<Q",raw[:8])[0]
print(json.loads(raw[8:8+n])["__metadata__"][sys.argv[1]])' "$1" "$2"
}

# ---- --keep-best alone: the best file holds the minimum of the evaluations of the log
"$STRIX" train --data corpus.txt --out kb.safetensors "${RUN[@]}" --keep-best >out.txt 2>err.txt \
    || fail "keep-best run: $(tail -n 1 err.txt)"
grep -q "^done: 60 of 60" out.txt && ok "ran to the end" || fail "$(tail -n 1 out.txt)"
# from the log: the best evaluation, and where --patience 2 stops (with its best so far)
read -r best_step best_val stop_step pbest_step <<<"$(python3 - kb.metrics.jsonl <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if "val_loss" in l]
b = min(ev, key=lambda l: l["val_loss"])
best, since, stop, pbest = float("inf"), 0, None, None
for l in ev:
    if l["val_loss"] < best:
        best, since, pbest = l["val_loss"], 0, l["step"]
    else:
        since += 1
    if since >= 2:
        stop = l["step"]
        break
print(b["step"], repr(b["val_loss"]), stop, pbest)
PY
)"
[ "$best_step" -lt 60 ] && ok "the best evaluation is not the last (step $best_step)" \
    || fail "best at step $best_step: the test's run does not overfit"
[ "$(meta step kb.best.safetensors)" = "$best_step" ] && ok "best file: step $best_step" \
    || fail "best file step $(meta step kb.best.safetensors), expected $best_step"
python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 1e-8 * b)' \
    "$(meta val_loss kb.best.safetensors)" "$best_val" \
    && ok "best file: val loss $best_val" || fail "best val $(meta val_loss kb.best.safetensors)"
[ "$(meta step kb.safetensors)" = 60 ] && ok "last checkpoint at 60" || fail "last not at 60"
"$STRIX" sample --model kb.best.safetensors --tokens 5 >/dev/null && ok "best file samples" \
    || fail "best file does not sample"

# ---- --patience 2: stops at the second evaluation without a new best
[ "$stop_step" != None ] || fail "the log has no two evaluations in a row without a new best"
"$STRIX" train --data corpus.txt --out p.safetensors "${RUN[@]}" --patience 2 >out.txt 2>err.txt
rc=$?
[ "$rc" -eq 0 ] && ok "patience: exit 0" || fail "patience: exit $rc"
grep -q "early stop at step $stop_step of 60: 2 evaluations without a val loss below .* (step $pbest_step)" \
    err.txt && ok "patience stopped at step $stop_step" || fail "patience: $(grep -v '|' err.txt)"
[ "$(meta step p.safetensors)" = "$stop_step" ] && ok "saved at $stop_step" \
    || fail "p.safetensors at step $(meta step p.safetensors)"
[ "$(meta step p.best.safetensors)" = "$pbest_step" ] && ok "its best file: step $pbest_step" \
    || fail "p.best.safetensors at step $(meta step p.best.safetensors)"

# ---- interrupted after the best, resumed with the same flags: the same stop and files
"$STRIX" train --data corpus.txt --out r.safetensors "${RUN[@]}" --patience 2 \
    --stop-after $((pbest_step + 2)) >/dev/null 2>&1 || fail "interrupted run"
"$STRIX" train --resume r.safetensors --patience 2 >out.txt 2>err.txt || fail "resumed run"
grep -q "early stop at step $stop_step of 60" err.txt && ok "resumed run stops at $stop_step" \
    || fail "resumed: $(grep -v '|' err.txt)"
same_file "resumed best == uninterrupted best" p.best.safetensors r.best.safetensors
same_file "resumed last == uninterrupted last" p.safetensors r.safetensors

# ---- another run's best file is replaced only with --force
rm kb.safetensors kb.metrics.jsonl
expect_error "another run's best file" "the best checkpoint 'kb.best.safetensors' of another run" \
    "$STRIX" train --data corpus.txt --out kb.safetensors "${RUN[@]}" --keep-best
finish
